"""The facts every check shares, computed once from a history.

- each client op paired with its invoke (an invoke left open counts as an info completion);
- who wrote each value (values are unique per key), and which writers must have committed:
  ok ops; info ops with an acknowledged send (its offset is known) or with a value that some
  ok op read (one value of a transaction read puts all its writes in scope);
- the version order of each key: offset -> values, from committed writers' sends and from
  every poll of any op (a poll only ever returns what was in the log);
- a dense index over each key's known offsets, so transaction markers and aborted records
  (offsets no committed value holds) are not mistaken for skipped records.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gregor.testing.history.history import History
from gregor.testing.history.op import FAIL, INFO, OK, POLL, SEND, TXN, Op


@dataclass
class Analysis:
    pairs: list[tuple[Op, Op]]                       # (invoke, completion), invoke order
    invoke_of: dict[int, Op]                         # completion index -> invoke
    writer: dict[tuple[str, Any], Op] = field(default_factory=dict)
    committed: set[int] = field(default_factory=set)  # completion indexes of committed writers
    ok_reads: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    version: dict[str, dict[int, set]] = field(default_factory=lambda: defaultdict(dict))
    offsets_of: dict[tuple[str, Any], list[int]] = field(default_factory=dict)
    _index: dict[str, list[int]] = field(default_factory=dict)
    _sends: dict[int, list] = field(default_factory=dict)     # completion index -> sends
    _reads: dict[int, list] = field(default_factory=dict)     # completion index -> reads

    def sends_of(self, op: Op) -> list:
        got = self._sends.get(op.index)
        if got is None:
            got = self._sends[op.index] = op.sends()
        return got

    def reads_of(self, op: Op) -> list:
        got = self._reads.get(op.index)
        if got is None:
            got = self._reads[op.index] = op.reads()
        return got

    @property
    def ops(self) -> list[Op]:
        return [done for _, done in self.pairs]

    def index(self, k: str, offset: int) -> int | None:
        """The dense position of `offset` among key k's known offsets (None if unknown)."""
        offs = self._index.get(k)
        if not offs:
            return None
        i = bisect.bisect_left(offs, offset)
        return i if i < len(offs) and offs[i] == offset else None

    def delta(self, k: str, before: int, after: int) -> int:
        """Dense-index distance between two offsets of k; 1 when either is unknown."""
        a, b = self.index(k, before), self.index(k, after)
        if a is None or b is None:
            return 1 if after > before else (0 if after == before else -1)
        return b - a

    def first_index(self, k: str, value) -> int | None:
        offs = self.offsets_of.get((k, value))
        return self.index(k, offs[0]) if offs else None

    def last_index(self, k: str, value) -> int | None:
        offs = self.offsets_of.get((k, value))
        return self.index(k, offs[-1]) if offs else None

    def is_committed(self, op: Op) -> bool:
        return op.index in self.committed


def analyze(history: History | list[Op]) -> Analysis:
    if not isinstance(history, History):
        history = History(history)
    pairs = []
    for inv, done in history.pairs():
        if done is None:
            done = Op(inv.index, inv.time, inv.process, INFO, inv.f, inv.value,
                      "no completion", inv.meta)
        pairs.append((inv, done))
    a = Analysis(pairs=pairs, invoke_of={done.index: inv for inv, done in pairs})
    data_ops = [done for _, done in pairs if done.f in (SEND, POLL, TXN)]
    for op in data_ops:
        a._sends[op.index], a._reads[op.index] = op.sends(), op.reads()

    for op in data_ops:
        for k, _, v in a.sends_of(op):
            a.writer.setdefault((k, v), op)
        if op.type == OK:
            for k, _, v in a.reads_of(op):
                a.ok_reads[k].add(v)

    for op in data_ops:
        if op.type == OK:
            a.committed.add(op.index)
        elif op.type == INFO:
            sends = a.sends_of(op)
            acked = op.f == SEND and any(o is not None for _, o, _ in sends)
            if acked or any(v in a.ok_reads.get(k, ()) for k, _, v in sends):
                a.committed.add(op.index)

    def place(k, offset, v):
        a.version[k].setdefault(offset, set()).add(v)

    for op in data_ops:
        if op.type != FAIL and op.index in a.committed:
            for k, o, v in a.sends_of(op):
                if o is not None:
                    place(k, o, v)
        for k, o, v in a.reads_of(op):
            place(k, o, v)

    by_value: dict[tuple[str, Any], set[int]] = defaultdict(set)
    for k, offsets in a.version.items():
        a._index[k] = sorted(offsets)
        for o, vs in offsets.items():
            for v in vs:
                by_value[(k, v)].add(o)
    a.offsets_of = {kv: sorted(os) for kv, os in by_value.items()}
    return a
