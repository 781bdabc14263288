"""The cleaner's I/O throttle (log.cleaner.io.max.bytes.per.second), used by the broker's
cleaner threads and by cleaner worker processes alike."""
from __future__ import annotations

import threading
import time


class Throttler:
    """Sleep so that the bytes counted stay under rate per second (shared by threads)."""

    def __init__(self, rate: float, clock=time.monotonic, sleep=time.sleep):
        self.rate = rate
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._start = clock()
        self._bytes = 0

    def __call__(self, n: int) -> None:
        if self.rate <= 0 or self.rate >= 1e300:
            return
        with self._lock:
            self._bytes += n
            now = self._clock()
            elapsed = now - self._start
            wait = self._bytes / self.rate - elapsed
            if elapsed > 1.0 and wait <= 0:       # a fresh window now and then
                self._start, self._bytes = now, 0
        if wait > 0:
            self._sleep(min(wait, 1.0))
