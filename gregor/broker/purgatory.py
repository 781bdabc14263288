"""The purgatory: requests that cannot be answered yet wait here until a condition holds or
their timeout passes.

A `DelayedOperation` knows how to check its condition (`try_complete`), what to do when it is
done (`on_complete`, exactly once) and when it times out (`on_expiration`, just before
`on_complete`). It is watched under keys (one per partition it involves); whoever changes the
state a key stands for (an append, a high-watermark move, a deletion) calls
`purgatory.check_and_complete(key)` and the watchers of that key re-check themselves.

Everything runs on the event loop thread, so there are no locks: the classic race between
"check" and "watch" cannot happen between two statements of the same callback.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Hashable, Iterable

log = logging.getLogger("gregor.broker.purgatory")


class DelayedOperation:
    """Subclass and implement try_complete() and on_complete(); optionally on_expiration()."""

    def __init__(self, timeout_ms: int):
        self.timeout_ms = max(0, int(timeout_ms))
        self.completed = False
        self._timer: asyncio.TimerHandle | None = None
        self._purgatory: "Purgatory | None" = None

    def try_complete(self) -> bool:
        """Check the condition; if it holds, call force_complete() and return its result."""
        raise NotImplementedError

    def try_complete_for(self, key: Hashable) -> bool:
        """Re-check after `key`'s state changed. An operation watching many keys may look at
        that one alone (whatever it does not watch has not changed, or it would have been
        told); by default the whole condition is checked again."""
        return self.try_complete()

    def on_complete(self) -> None:
        """Build the result (called exactly once, on completion or expiry)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called when the timeout passes, just before on_complete()."""

    def force_complete(self) -> bool:
        """Complete now. True if this call completed it (False if it already was)."""
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._purgatory is not None:
            self._purgatory._unwatch(self)
        try:
            self.on_complete()
        except Exception:
            log.exception("delayed operation %r failed to complete", self)
        return True

    def _expire(self) -> None:
        self._timer = None
        if self.completed:
            return
        try:
            self.on_expiration()
        except Exception:
            log.exception("delayed operation %r failed on expiration", self)
        self.force_complete()


class Purgatory:
    """Delayed operations of one kind (produce, fetch), watched by key."""

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop | None = None):
        self.name = name
        self._loop = loop
        # key -> its operations, as an insertion-ordered set: a completed operation leaves in
        # O(1), so a round that completes n waiting operations costs O(n), not O(n^2).
        self.watchers: dict[Hashable, dict[DelayedOperation, None]] = {}
        self._waiting: dict[DelayedOperation, tuple] = {}   # op -> the keys it watches
        self._prune_at = 1024     # drop emptied key sets once there are this many keys
        self.expired = 0          # operations completed by their timeout, for metrics/tests

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete op now if it can; otherwise watch it under keys until it can or expires.
        Returns True if it completed right away."""
        if op.try_complete():
            return True
        keys = tuple(keys)
        watchers = self.watchers
        for key in keys:
            ops = watchers.get(key)
            if ops is None:
                if len(watchers) >= self._prune_at:
                    watchers = self._prune()
                ops = watchers[key] = {}
            ops[op] = None
        self._waiting[op] = keys
        op._purgatory = self
        if op.timeout_ms == 0:
            self._on_timeout(op)
        else:
            op._timer = self.loop.call_later(op.timeout_ms / 1000.0, self._on_timeout, op)
        return False

    def _on_timeout(self, op: DelayedOperation) -> None:
        if not op.completed:
            self.expired += 1
        op._expire()

    def _unwatch(self, op: DelayedOperation) -> None:
        # Called once per operation when it completes, so idle keys never pin finished
        # operations. A key's emptied set stays for the next watcher: a long poll over a
        # thousand partitions would otherwise make and drop a thousand sets per fetch (and
        # set off the garbage collector); _prune drops them when they outnumber the rest.
        watchers = self.watchers
        for key in self._waiting.pop(op, ()):
            ops = watchers.get(key)
            if ops is not None:
                ops.pop(op, None)

    def _prune(self) -> dict:
        self.watchers = {k: ops for k, ops in self.watchers.items() if ops}
        self._prune_at = max(1024, 2 * len(self.watchers))
        return self.watchers

    def check_and_complete(self, key: Hashable) -> int:
        """Let the operations watching key re-check their condition; returns how many
        completed."""
        ops = self.watchers.get(key)
        if not ops:
            return 0
        done = 0
        # A snapshot: completing an operation removes it from the watchers.
        for op in list(ops):
            if not op.completed and op.try_complete_for(key):
                done += 1
        return done

    def complete_all(self) -> int:
        """Force every waiting operation to complete now (used at shutdown)."""
        done = 0
        for op in list(self._waiting):
            # what can complete on its own does (a write the flush just committed answers
            # success); the rest is forced
            if op.try_complete() or op.force_complete():
                done += 1
        return done

    def delayed(self) -> int:
        """How many operations are waiting."""
        return len(self._waiting)

    def watched(self) -> int:
        """Total watch entries (an operation is counted once per key it watches)."""
        return sum(len(v) for v in self.watchers.values())
