"""What a read_committed reader must never see.

- G1a (aborted read): any op read a value whose writer definitely failed: an aborted
  transaction, or a send the broker definitely refused.
- precommitted-read: an op read a value it sent itself, before it committed (a Kafka consumer
  never sees a transaction's records before its commit marker; its own producer's included).
"""
from __future__ import annotations

from gregor.testing.history.analysis import Analysis
from gregor.testing.history.op import FAIL


def aborted_read(a: Analysis) -> list[dict]:
    out = []
    for op in a.ops:
        for k, o, v in a.reads_of(op):
            w = a.writer.get((k, v))
            if w is not None and w.type == FAIL and w.index != op.index:
                out.append({"key": k, "value": v, "offset": o, "reader": op.index,
                            "reader_type": op.type, "writer": w.index, "writer_error": w.error})
    return out


def precommitted_read(a: Analysis) -> list[dict]:
    out = []
    for op in a.ops:
        mine = {(k, v) for k, _, v in a.sends_of(op)}
        if not mine:
            continue
        for k, o, v in a.reads_of(op):
            if (k, v) in mine:
                out.append({"key": k, "value": v, "offset": o, "op": op.index})
    return out
