"""Offsets that do not name one value, or values that sit at several offsets.

- inconsistent-offsets: one offset of a key seen holding two or more values (two leaders'
  logs diverged, or a record was rewritten);
- duplicate: one value (values are unique per key) at more than one offset: written twice.
"""
from __future__ import annotations

from gregor.testing.history.analysis import Analysis


def _ops_touching(a: Analysis, k: str, offset: int) -> list[int]:
    out = []
    for op in a.ops:
        if any(kk == k and o == offset for kk, o, _ in a.sends_of(op)) or \
                any(kk == k and o == offset for kk, o, _ in a.reads_of(op)):
            out.append(op.index)
    return out


def inconsistent_offsets(a: Analysis) -> list[dict]:
    found = [(k, o, vs) for k, offsets in sorted(a.version.items())
             for o, vs in sorted(offsets.items()) if len(vs) > 1]
    return [{"key": k, "offset": o, "values": sorted(vs, key=repr),
             "ops": _ops_touching(a, k, o)} for k, o, vs in found[:64]] + \
        [{"key": k, "offset": o, "values": sorted(vs, key=repr)} for k, o, vs in found[64:]]


def duplicate(a: Analysis) -> list[dict]:
    out = []
    for (k, v), offsets in sorted(a.offsets_of.items(), key=lambda kv: repr(kv[0])):
        if len(offsets) > 1:
            w = a.writer.get((k, v))
            out.append({"key": k, "value": v, "offsets": offsets,
                        "writer": w.index if w is not None else None})
    return out
