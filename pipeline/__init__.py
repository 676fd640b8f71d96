__all__ = ["layout", "match", "parse", "problems", "records", "render", "schema"]
