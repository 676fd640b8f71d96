__all__ = ["formulas", "layout", "match", "parse", "problems", "records", "releases", "render",
           "schema"]
