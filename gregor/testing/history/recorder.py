"""Recorder: wraps a client call so that its invoke and its completion are both recorded.

    rec = Recorder(history, classify=confluent_classify)
    with rec.op("send", [send("t/0", 7)]) as op:
        md = deliver(...)                       # may raise
        op.value = [send("t/0", 7, md.offset)]  # learn what happened, as it happens
    # leaving the block completes the op: ok normally; on an exception, `classify` decides
    # fail (definitely not written) or info (maybe written), and the op keeps the partial
    # value it had learned (offsets already known stay known, as in Jepsen).

A block may also end the op itself with `op.ok(value)`, `op.fail(error)` or `op.info(error)`.
A plain `with` works inside coroutines too (awaits inside the block are fine).
"""
from __future__ import annotations

from typing import Any, Callable

from gregor.testing.history.history import History
from gregor.testing.history.op import FAIL, INFO, OK

# classify(exception) -> (type, error name), type "fail" or "info"; None = not a client error
# (a bug in the workload): the op is recorded info and the exception propagates.
Classifier = Callable[[BaseException], "tuple[str, str] | None"]


def default_classify(exc: BaseException):
    if isinstance(exc, (TimeoutError, ConnectionError, OSError)):
        return INFO, type(exc).__name__
    return None


class PendingOp:
    def __init__(self, recorder: "Recorder", f: str, value: Any, meta: dict):
        self._recorder = recorder
        self.invoked = recorder.history.invoke(recorder.process, f, value, **meta)
        self.value = value           # the completion's value; update it as facts are learned
        self.meta: dict = {}         # merged into the completion's meta
        self.completed = None
        recorder.current = self      # callbacks (a rebalance) can find the op in flight

    def ok(self, value: Any = None, **meta) -> None:
        self._complete(OK, value, None, meta)

    def fail(self, error: str, value: Any = None, **meta) -> None:
        self._complete(FAIL, value, error, meta)

    def info(self, error: str, value: Any = None, **meta) -> None:
        self._complete(INFO, value, error, meta)

    def _complete(self, type: str, value, error, meta) -> None:
        if self.completed is not None:
            raise RuntimeError(f"op {self.invoked.index} already completed "
                               f"{self.completed.type}")
        if value is not None:
            self.value = value
        self.completed = self._recorder.history.complete(
            self.invoked, type, self.value, error, **{**self.meta, **meta})
        if self._recorder.current is self:
            self._recorder.current = None

    @property
    def type(self) -> str | None:
        return self.completed.type if self.completed is not None else None

    def __enter__(self) -> "PendingOp":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            if self.completed is None:
                self.ok()
            return False
        if self.completed is not None:
            return False                      # already decided; let the exception go
        verdict = self._recorder.classify(exc)
        if verdict is None:
            self.info(f"{type(exc).__name__}: {exc}")
            return False
        kind, name = verdict
        self._complete(kind, None, name, {})
        return True                           # a client error, recorded: swallowed


class Recorder:
    """One logical process writing to a history; `new_process()` after a crash."""

    def __init__(self, history: History, *, process=None, classify: Classifier | None = None):
        self.history = history
        self.process = history.new_process() if process is None else process
        self.classify = classify or default_classify
        self.current: PendingOp | None = None      # the op in flight, if any

    def op(self, f: str, value: Any = None, **meta) -> PendingOp:
        return PendingOp(self, f, value, meta)

    def new_process(self) -> int:
        self.process = self.history.new_process()
        return self.process
