"""The formula check: every name a derivatives.yaml formula uses and every bracket it opens,
checked before any compiler sees the formula (gradshard's own rule; torchgen pastes formulas
into the generated C++ as they are)."""

__all__ = ["lexer", "names"]
