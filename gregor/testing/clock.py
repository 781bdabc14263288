"""A manual clock for the broker's coordinators: `Broker(clock="manual")`.

    with Broker(clock="manual") as broker:
        ...a consumer joins with session.timeout.ms=10000...
        broker.clock.advance(10.001)      # its session timer fires now, not in ten seconds

The group coordinator (session, rebalance and initial-rebalance-delay timers, offsets
retention) and the transaction coordinator (transaction timeouts, transactional id
expiration) read time and schedule timers through the clock the broker is given; with none
they use the loop and time.time() as always, so production pays nothing. With a ManualClock
time stands still until advance(): the timers due on the way fire in order, each with the
clock at its due time, on the broker's loop, and advance() returns once they have run (and
the housekeeping they woke has had its turn). What they start that waits for the disk (the
abort of a timed-out transaction writes markers and fsyncs) finishes in real time after that:
wait for its outcome, not for advance().

Everything else keeps real time: the network, request timeouts, fsync, log retention, and the
clients themselves (a client's own timers still run on the wall clock).
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import threading


class TimerHandle:
    __slots__ = ("due", "fn", "cancelled")

    def __init__(self, due: float, fn):
        self.due = due
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    # Settles after each batch of timers: a woken housekeeping task may await a write and
    # then sleep again; these loop turns let it register its next timer before time moves on.
    SETTLE_TURNS = 20

    def __init__(self, start: float = 1_767_225_600.0):
        """start: the wall-clock time it shows first (seconds since the epoch)."""
        self._wall = float(start)
        self._mono = 0.0
        self._timers: list = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- reading -------------------------------------------------------------------------

    def time(self) -> float:
        """Seconds since the epoch, as time.time()."""
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def time_ms(self) -> int:
        return int(self._wall * 1000)

    # -- scheduling (on the broker's loop) -------------------------------------------------

    def call_later(self, delay: float, fn) -> TimerHandle:
        """fn() once the clock has moved `delay` seconds on; a handle with cancel()."""
        handle = TimerHandle(self._mono + max(0.0, delay), fn)
        with self._lock:
            heapq.heappush(self._timers, (handle.due, next(self._seq), handle))
        return handle

    async def sleep(self, seconds: float) -> None:
        fut = asyncio.get_running_loop().create_future()
        self.call_later(seconds, lambda: fut.done() or fut.set_result(None))
        await fut

    def pending(self) -> int:
        """Timers waiting to fire."""
        with self._lock:
            return sum(1 for _d, _s, h in self._timers if not h.cancelled)

    def next_due(self) -> float | None:
        """Seconds until the next timer fires (None: none is waiting)."""
        with self._lock:
            due = [h.due for _d, _s, h in self._timers if not h.cancelled]
        return min(due) - self._mono if due else None

    # -- moving time -----------------------------------------------------------------------

    def advance(self, seconds: float, timeout: float = 30.0) -> None:
        """Move time on by `seconds`, firing every timer due on the way in order. From the
        test's thread: returns once they have run on the broker's loop."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward; advance({seconds})")
        loop = self._loop
        if loop is None or loop.is_closed():
            self._move(seconds)          # no broker attached: nothing can be due
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError("advance() from the broker's own loop would wait for itself; "
                               "call it from the test's thread")
        asyncio.run_coroutine_threadsafe(self._advance(seconds), loop).result(timeout)

    async def _advance(self, seconds: float) -> None:
        target = self._mono + seconds
        await self._settle()
        while True:
            with self._lock:
                while self._timers and self._timers[0][2].cancelled:
                    heapq.heappop(self._timers)
                if not self._timers or self._timers[0][0] > target:
                    break
                due = self._timers[0][0]
                batch = []
                while self._timers and self._timers[0][0] == due:
                    handle = heapq.heappop(self._timers)[2]
                    if not handle.cancelled:
                        batch.append(handle)
            self._move(due - self._mono)
            for handle in batch:
                if not handle.cancelled:
                    handle.fn()
            await self._settle()
        self._move(target - self._mono)
        await self._settle()

    async def _settle(self) -> None:
        for _ in range(self.SETTLE_TURNS):
            await asyncio.sleep(0)

    def _move(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds

    # -- attachment --------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def detach(self) -> None:
        """The broker stopped: its timers go with it (the time shown stays)."""
        self._loop = None
        with self._lock:
            self._timers.clear()


def make_clock(spec) -> ManualClock | None:
    if spec is None or spec == "real":
        return None
    if spec == "manual":
        return ManualClock()
    if isinstance(spec, ManualClock):
        return spec
    raise ValueError(f"clock must be None (real time), 'manual' or a ManualClock; got {spec!r}")
