"""Acknowledged writes that readers never saw.

- lost-write (Jepsen's definition): for each key, the bound is the furthest position at which
  an ok read saw some value; every committed value placed at or before that bound must have
  been read by some ok op. A committed value below the bound that no ok op read was lost (or
  hidden from every reader), while values after it were read.
- unseen: committed values (acknowledged sends, committed transactions) that no ok op ever read
  by the end of the history. With a final read of every partition from the beginning, unseen
  is loss past the last value anyone read. An info send nobody read is neither: it may simply
  never have been written.
"""
from __future__ import annotations

from collections import defaultdict

from gregor.testing.history.analysis import Analysis
from gregor.testing.history.op import FAIL


def _committed_values(a: Analysis) -> dict[str, dict]:
    """key -> {value: writer op} for writes that must have committed."""
    out: dict[str, dict] = defaultdict(dict)
    for (k, v), w in a.writer.items():
        if w.type != FAIL and a.is_committed(w):
            out[k][v] = w
    return out


def lost_write(a: Analysis) -> list[dict]:
    out = []
    committed = _committed_values(a)
    for k in sorted(committed):
        read = a.ok_reads.get(k, set())
        bound, bound_value = -1, None
        for v in read:
            i = a.first_index(k, v)
            if i is not None and i > bound:
                bound, bound_value = i, v
        if bound < 0:
            continue
        for v, w in committed[k].items():
            if v in read:
                continue
            i = a.last_index(k, v)
            if i is not None and i <= bound:
                offs = a.offsets_of[(k, v)]
                out.append({"key": k, "value": v, "offset": offs[-1], "writer": w.index,
                            "writer_type": w.type,
                            "read_later": {"value": bound_value,
                                           "offset": a.offsets_of[(k, bound_value)][0]}})
    out.sort(key=lambda e: (e["key"], e["offset"]))
    return out


def unseen(a: Analysis) -> list[dict]:
    out = []
    committed = _committed_values(a)
    for k in sorted(committed):
        read = a.ok_reads.get(k, set())
        missing = [(v, w) for v, w in committed[k].items() if v not in read]
        if not missing:
            continue
        offs = [o for _, w in missing for kk, o, vv in a.sends_of(w) if kk == k and o is not None]
        missing.sort(key=lambda vw: vw[1].index)
        out.append({"key": k, "count": len(missing),
                    "values": [v for v, _ in missing[:16]],
                    "writers": [w.index for _, w in missing[:16]],
                    "offsets": sorted(offs)[:16]})
    return out
