"""BufferPool: bounds the bytes the producer holds to buffer.memory.

Python manages the actual buffers; what matters is the bound. Each batch reserves its capacity
(batch.size, or the record's size when larger) when it is opened and gives it back when it is
completed, so the accumulator never holds more than buffer.memory. A send() that finds the pool
empty waits, first come first served, up to max.block.ms.
"""
from __future__ import annotations

import collections
import threading
import time

from ..errors import KafkaTimeoutError


class BufferPool:
    def __init__(self, total_bytes: int, clock=time.monotonic):
        self.total = total_bytes
        self.available = total_bytes
        self.clock = clock
        self._lock = threading.Lock()
        self._waiters: collections.deque[threading.Condition] = collections.deque()
        self.wait_time_total = 0.0  # seconds spent blocked in allocate (metric)
        self.closed = False
        self.on_wait = None  # called when a thread starts waiting (wakes the sender)

    def allocate(self, size: int, max_block_s: float) -> None:
        """Reserve size bytes, waiting up to max_block_s; raises KafkaTimeoutError after."""
        if size > self.total:
            raise ValueError(f"a batch of {size} bytes can never fit in buffer.memory="
                             f"{self.total}; raise buffer.memory or send smaller records")
        with self._lock:
            if self.available >= size and not self._waiters:
                self.available -= size
                return
            cond = threading.Condition(self._lock)
            self._waiters.append(cond)
            if self.on_wait is not None:
                self.on_wait()
            start = self.clock()
            deadline = start + max_block_s
            try:
                while self.available < size or self._waiters[0] is not cond:
                    if self.closed:
                        raise KafkaTimeoutError("producer closed while send() waited for memory")
                    left = deadline - self.clock()
                    if left <= 0:
                        raise KafkaTimeoutError(
                            f"send() waited {max_block_s * 1000:.0f} ms (max.block.ms) for "
                            f"{size} bytes of buffer.memory ({self.total} bytes, "
                            f"{self.available} free): the broker is not keeping up or not "
                            "reachable; raise max.block.ms/buffer.memory or slow down")
                    cond.wait(left)
                self.available -= size
            finally:
                self.wait_time_total += self.clock() - start
                self._waiters.remove(cond)
                if self._waiters and self.available > 0:
                    self._waiters[0].notify()

    def try_allocate(self, size: int) -> bool:
        """Take size bytes if they are free right now (and nobody waits); never blocks."""
        with self._lock:
            if self.available >= size and not self._waiters:
                self.available -= size
                return True
            return False

    def charge(self, size: int) -> None:
        """Take size bytes without waiting (may go below zero: later allocations then wait
        until enough comes back). Used to account for Python overhead after the fact."""
        with self._lock:
            self.available -= size

    def deallocate(self, size: int) -> None:
        with self._lock:
            self.available += size
            if self._waiters:
                self._waiters[0].notify()

    @property
    def queued(self) -> int:
        """Threads waiting for memory (the accumulator drains eagerly while > 0)."""
        return len(self._waiters)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            for c in self._waiters:
                c.notify_all()
