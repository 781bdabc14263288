"""Order of sends and polls, within one operation and across one process's operations.

Distances are dense-index distances (analysis.Analysis.delta): 1 is the next known record,
more than 1 skipped one, less than 1 went back or repeated.
- poll-skip / nonmonotonic-poll: a process's first read of a key in an ok poll (or txn)
  against its last read of that key in its previous ok one. An assign or subscribe (ok or info)
  resets the expectation, and so does a rebalance the op reports (meta "rebalance_log") for
  the keys it moved; a non-ok poll leaves the consumer's position unknown, so it resets too.
- int-poll-skip / int-nonmonotonic-poll: consecutive reads of one key inside one op (keys a
  rebalance inside the op moved are exempt).
- int-send-skip / int-nonmonotonic-send: consecutive acknowledged sends to one key inside one
  op (a skip is normal when other producers write the key too).
- nonmonotonic-send: a process's first send to a key in an ok or info op, at or below its
  last send to that key in its previous one.
"""
from __future__ import annotations

from gregor.testing.history.analysis import Analysis
from gregor.testing.history.op import ASSIGN, CRASH, OK, INFO, POLL, SEND, SUBSCRIBE, TXN, Op


def _rebalanced_keys(op: Op) -> set[str]:
    keys: set[str] = set()
    for entry in op.meta.get("rebalance_log") or ():
        keys.update(entry.get("keys", ()) if isinstance(entry, dict) else entry)
    return keys


def _runs(reads):
    """Per key, the offsets read in order."""
    per: dict[str, list[int]] = {}
    for k, o, _ in reads:
        per.setdefault(k, []).append(o)
    return per


def polls(a: Analysis) -> dict[str, list[dict]]:
    out = {"poll-skip": [], "nonmonotonic-poll": [], "int-poll-skip": [],
           "int-nonmonotonic-poll": []}
    last: dict[object, dict[str, tuple[int, int]]] = {}   # process -> key -> (offset, op)
    for op in a.ops:
        moved = _rebalanced_keys(op)       # a rebalance may land in any op (a send's too)
        for k in moved:
            last.get(op.process, {}).pop(k, None)
        if op.f in (ASSIGN, SUBSCRIBE, CRASH):
            if op.type in (OK, INFO) or op.f == CRASH:
                last.pop(op.process, None)
            continue
        if op.f not in (POLL, TXN):
            continue
        if op.type != OK:
            last.pop(op.process, None)
            continue
        seen = last.setdefault(op.process, {})
        for k, offsets in _runs(a.reads_of(op)).items():
            if k not in moved:
                for before, after in zip(offsets, offsets[1:]):
                    d = a.delta(k, before, after)
                    if d != 1:
                        out["int-poll-skip" if d > 1 else "int-nonmonotonic-poll"].append(
                            {"key": k, "op": op.index, "process": op.process,
                             "offsets": [before, after], "delta": d})
            if k in seen:
                prev_offset, prev_op = seen[k]
                d = a.delta(k, prev_offset, offsets[0])
                if d != 1:
                    out["poll-skip" if d > 1 else "nonmonotonic-poll"].append(
                        {"key": k, "process": op.process, "ops": [prev_op, op.index],
                         "offsets": [prev_offset, offsets[0]], "delta": d})
            seen[k] = (offsets[-1], op.index)
    return out


def sends(a: Analysis) -> dict[str, list[dict]]:
    out = {"nonmonotonic-send": [], "int-send-skip": [], "int-nonmonotonic-send": []}
    last: dict[object, dict[str, tuple[int, int]]] = {}
    for op in a.ops:
        if op.f == CRASH:
            last.pop(op.process, None)
            continue
        if op.f not in (SEND, TXN) or op.type not in (OK, INFO):
            continue
        per = _runs((k, o, v) for k, o, v in a.sends_of(op) if o is not None)
        seen = last.setdefault(op.process, {})
        for k, offsets in per.items():
            for before, after in zip(offsets, offsets[1:]):
                d = a.delta(k, before, after)
                if d != 1:
                    out["int-send-skip" if d > 1 else "int-nonmonotonic-send"].append(
                        {"key": k, "op": op.index, "process": op.process,
                         "offsets": [before, after], "delta": d})
            if k in seen and offsets[0] <= seen[k][0]:
                out["nonmonotonic-send"].append(
                    {"key": k, "process": op.process, "ops": [seen[k][1], op.index],
                     "offsets": [seen[k][0], offsets[0]]})
            seen[k] = (offsets[-1], op.index)
    return out
