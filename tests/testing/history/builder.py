"""Hand-made histories for the checker's tests: one call per operation, a counting clock."""
from __future__ import annotations

import itertools

from gregor.testing.history import History, poll, send


class Hist:
    def __init__(self):
        ticks = itertools.count(1)
        self.h = History(clock=lambda: next(ticks) * 1_000_000)

    def op(self, process, f, invoked, type, done=None, error=None, **meta):
        inv = self.h.invoke(process, f, invoked)
        return self.h.complete(inv, type, done, error, **meta)

    def send(self, process, k, v, offset=None, type="ok", error=None):
        return self.op(process, "send", [send(k, v)], type,
                       [send(k, v, offset)] if offset is not None else None, error)

    def poll(self, process, records, type="ok", **meta):
        return self.op(process, "poll", [poll()], type, [poll(records)], **meta)

    def txn(self, process, mops, type="ok", error=None, **meta):
        invoked = [m if m[0] == "poll" else ("send", m[1], m[2][1] if isinstance(m[2], tuple)
                                            else m[2]) for m in mops]
        invoked = [("poll",) if m[0] == "poll" else m for m in invoked]
        return self.op(process, "txn", invoked, type, mops, error, **meta)

    def assign(self, process, keys, type="ok", **meta):
        return self.op(process, "assign", list(keys), type, **meta)

    def event(self, f, **value):
        return self.h.event(f, value)
