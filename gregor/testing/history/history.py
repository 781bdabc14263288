"""A history: every operation's invoke and completion, in the order they happened.

Appended to from many threads and asyncio tasks at once (one lock; an append is a few
microseconds), read back as a list, and kept on disk as JSON lines (one op a line) so a run's
history can be checked again later or by another tool.
"""
from __future__ import annotations

import itertools
import json
import os
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from gregor.testing.history.op import COMPLETIONS, INVOKE, Op


class History:
    def __init__(self, ops: Iterable[Op] = (), *, clock: Callable[[], int] = time.monotonic_ns):
        self._lock = threading.Lock()
        self._ops: list[Op] = []
        self._clock = clock
        self._processes = itertools.count()
        self._open: dict[Any, Op] = {}          # process -> its invoke not yet completed
        for op in ops:
            self._append_locked(op)
        numeric = [op.process for op in self._ops if isinstance(op.process, int)]
        self._processes = itertools.count(max(numeric, default=-1) + 1)

    # --- writing --------------------------------------------------------------------------
    def new_process(self) -> int:
        """A process number never used before in this history."""
        with self._lock:
            return next(self._processes)

    def invoke(self, process, f: str, value: Any = None, **meta) -> Op:
        return self.append(Op(-1, self._clock(), process, INVOKE, f, value, None, meta))

    def complete(self, invoked: Op, type: str, value: Any = None, error: str | None = None,
                 **meta) -> Op:
        if type not in COMPLETIONS:
            raise ValueError(f"a completion is one of {COMPLETIONS}, not {type!r}")
        merged = {**invoked.meta, **meta}
        return self.append(Op(-1, self._clock(), invoked.process, type, invoked.f,
                              invoked.value if value is None else value, error, merged))

    def event(self, f: str, value: Any = None, *, process="nemesis", type: str = "info",
              **meta) -> Op:
        """An event that is not a client's operation (a fault, a heal): one line, no pair."""
        return self.append(Op(-1, self._clock(), process, type, f, value, None, meta))

    def append(self, op: Op) -> Op:
        with self._lock:
            return self._append_locked(op)

    def _append_locked(self, op: Op) -> Op:
        if op.index != len(self._ops):
            op = op.with_index(len(self._ops))
        if op.type == INVOKE:
            if op.process in self._open:
                raise ValueError(f"process {op.process!r} invoked {op.f} while its "
                                 f"{self._open[op.process].f} is still open")
            self._open[op.process] = op
        elif op.process in self._open:
            if self._open[op.process].f != op.f:
                raise ValueError(f"process {op.process!r} completed {op.f} but invoked "
                                 f"{self._open[op.process].f}")
            del self._open[op.process]
        self._ops.append(op)
        return op

    # --- reading --------------------------------------------------------------------------
    @property
    def ops(self) -> list[Op]:
        """A snapshot of the ops so far."""
        with self._lock:
            return list(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __getitem__(self, i: int) -> Op:
        return self._ops[i]

    def open_ops(self) -> list[Op]:
        """Invokes that have no completion (a history cut short)."""
        with self._lock:
            return list(self._open.values())

    def pairs(self) -> list[tuple[Op, Op | None]]:
        """(invoke, completion) for each client operation, in invoke order; completion None
        when the history ends first (the checker treats that as info)."""
        out, pending = [], {}
        for op in self.ops:
            if op.type == INVOKE:
                pending[op.process] = len(out)
                out.append([op, None])
            elif op.process in pending:
                out[pending.pop(op.process)][1] = op
        return [(a, b) for a, b in out]

    def completions(self) -> list[Op]:
        """Every completed client op (events excluded), with invokes left open reported as
        info completions carrying the invoke's value."""
        out = []
        for inv, done in self.pairs():
            out.append(done if done is not None else Op(inv.index, inv.time, inv.process,
                                                        "info", inv.f, inv.value,
                                                        "no completion", inv.meta))
        return out

    # --- JSON lines -----------------------------------------------------------------------
    def dump(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as out:
            for op in self.ops:
                out.write(json.dumps(op.to_json(), separators=(",", ":")) + "\n")

    def dumps(self) -> str:
        return "".join(json.dumps(op.to_json(), separators=(",", ":")) + "\n"
                       for op in self.ops)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "History":
        with open(path, encoding="utf-8") as src:
            return cls.loads(src.read())

    @classmethod
    def loads(cls, text: str) -> "History":
        return cls(Op.from_json(json.loads(line)) for line in text.splitlines() if line.strip())
