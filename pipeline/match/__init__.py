"""The match stage: which derivative infos each native function uses, and the infos
synthesized for `_foreach_*` ops (torchgen: gen_variable_type.py's
match_differentiability_info, gen_foreach_derivativeinfo)."""

__all__ = ["foreach", "match_infos"]
