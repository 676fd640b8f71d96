__all__ = ["engine", "errors", "graph", "maintenance", "objects", "store", "version"]
