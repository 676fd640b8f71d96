__all__ = ["layout", "match", "parse", "problems", "records", "releases", "render", "schema"]
