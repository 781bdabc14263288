"""Fakes for the group coordinator's ports: a clock with timers, and a store that keeps what
was written as batches (so a second coordinator can load them)."""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from gregor.broker.group.coordinator import GroupConfig, GroupCoordinator
from gregor.protocol.records.batch import CONTROL_ABORT, CONTROL_COMMIT


class FakeTimers:
    def __init__(self):
        self.now = 1_000_000
        self._heap: list = []
        self._seq = itertools.count()

    def clock(self) -> int:
        return self.now

    def call_later(self, delay_ms, fn):
        t = _Timer(self.now + delay_ms, fn)
        heapq.heappush(self._heap, (t.when, next(self._seq), t))
        return t

    def advance(self, ms: int) -> None:
        end = self.now + ms
        while self._heap and self._heap[0][0] <= end:
            when, _, t = heapq.heappop(self._heap)
            self.now = max(self.now, when)
            if not t.cancelled:
                t.fn()
        self.now = end


@dataclass
class _Timer:
    when: int
    fn: object
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass
class Batch:
    records: list
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False
    control_type: int | None = None


@dataclass
class FakeStore:
    """Writes complete at once (or are held while `hold` is set, or fail with `fail`)."""
    batches: dict = field(default_factory=dict)     # partition -> [Batch]
    next_offset: dict = field(default_factory=dict)
    hold: bool = False
    held: list = field(default_factory=list)
    fail: int = 0

    def write(self, partition, records, done, producer=None):
        if self.fail:
            return done(self.fail, -1)
        start = self.next_offset.get(partition, 0)
        recs = [Rec(start + i, k, v) for i, (k, v) in enumerate(records)]
        self.next_offset[partition] = start + len(recs)
        self.batches.setdefault(partition, []).append(Batch(
            recs, producer_id=producer[0] if producer else -1,
            is_transactional=producer is not None))
        last = start + len(recs) - 1
        if self.hold:
            self.held.append(lambda: done(0, last))
        else:
            done(0, last)

    def release(self) -> None:
        held, self.held = self.held, []
        for f in held:
            f()

    def marker(self, partition: int, producer_id: int, commit: bool) -> None:
        start = self.next_offset.get(partition, 0)
        self.next_offset[partition] = start + 1
        self.batches.setdefault(partition, []).append(Batch(
            [Rec(start, None, None)], producer_id=producer_id, is_transactional=True,
            is_control=True, control_type=CONTROL_COMMIT if commit else CONTROL_ABORT))


def make(timers=None, store=None, **cfg) -> tuple[GroupCoordinator, FakeTimers, FakeStore]:
    timers = timers or FakeTimers()
    store = store or FakeStore()
    config = GroupConfig(num_partitions=cfg.pop("num_partitions", 3),
                         initial_rebalance_delay_ms=cfg.pop("initial_rebalance_delay_ms", 0),
                         **cfg)
    c = GroupCoordinator(config, store, timers, timers.clock)
    for n in range(config.num_partitions):
        c.load_partition(n, store.batches.get(n, []))
    return c, timers, store


class Answer:
    """A response callback that remembers what it was called with."""

    def __init__(self):
        self.value = None
        self.calls = 0

    def __call__(self, value) -> None:
        self.value = value
        self.calls += 1

    @property
    def done(self) -> bool:
        return self.calls > 0

    def __getitem__(self, k):
        return self.value[k]
