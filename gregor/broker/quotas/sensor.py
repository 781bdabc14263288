"""Kafka's quota measurements, sans-I/O (time is a parameter, in milliseconds).

`Rate` is Kafka's Rate over a WindowedSum (clients' metrics/stats/Rate.java, SampledStat.java):
values are summed into `num` samples of `window_ms` each (quota.window.num x
quota.window.size.seconds, 11 x 1 s by default) plus one overlapping sample; the rate is the sum
over the retained samples divided by the time they cover, and that time is never taken below
num - 1 whole windows (so one burst right after a quiet spell is not read as a huge rate).

A value over the bound gives the throttle time of QuotaUtils.throttleTime: the delay X that
brings the observed rate O back to the target T over the window W, O * W / (W + X) = T, so
X = (O - T) / T * W, rounded to whole milliseconds.

`TokenBucket` is the controller mutation quota's stat (KIP-599): tokens refill at the quota's
rate up to a burst of num x window x quota; a request is admitted while tokens are not
negative (and may take them below zero), and the throttle time is what refills them to zero.
"""
from __future__ import annotations


class Rate:
    """Kafka's Rate over a WindowedSum. The sum, the oldest sample's start and the earliest
    time a sample may expire are kept up to date, so recording and measuring cost O(1)
    instead of a pass over the samples per request (a pass happens once per window, when
    a sample is recycled or expires)."""
    __slots__ = ("num", "window_ms", "samples", "current", "total", "oldest_start",
                 "next_expiry", "expire_ms")

    def __init__(self, num: int, window_ms: int):
        self.num = max(1, num)
        self.window_ms = max(1, window_ms)
        self.expire_ms = self.num * self.window_ms
        # each sample: [value, start_ms, last_event_ms]
        self.samples: list[list] = []
        self.current = 0
        self.total = 0.0
        self.oldest_start = 0
        self.next_expiry = 0          # no sample can expire before this time

    def _first(self, now_ms: int) -> list:
        sample = [0.0, now_ms, now_ms]
        self.samples.append(sample)
        self.oldest_start = now_ms
        self.next_expiry = now_ms + self.expire_ms
        return sample

    def record(self, value: float, now_ms: int) -> None:
        # as Kafka's SampledStat.record: no purge here (measuring purges); moving this
        # sample's last event later keeps next_expiry a safe lower bound
        sample = self.samples[self.current] if self.samples else self._first(now_ms)
        if now_ms - sample[1] >= self.window_ms:
            sample = self._advance(now_ms)
        sample[0] += value
        sample[2] = now_ms
        self.total += value

    def _advance(self, now_ms: int) -> list:
        # num samples plus one that overlaps the start of the measured window
        self.current = (self.current + 1) % (self.num + 1)
        if self.current >= len(self.samples):
            sample = [0.0, now_ms, now_ms]
            self.samples.append(sample)
        else:
            sample = self.samples[self.current]
            sample[0], sample[1], sample[2] = 0.0, now_ms, now_ms
        self._recount()
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self.expire_ms
        for s in self.samples:
            if now_ms - s[2] >= expire:       # no event within the monitored window
                s[0], s[1], s[2] = 0.0, now_ms, now_ms
        self._recount()

    def _recount(self) -> None:
        samples = self.samples
        self.total = sum(s[0] for s in samples)
        self.oldest_start = min(s[1] for s in samples)
        self.next_expiry = min(s[2] for s in samples) + self.expire_ms

    def window_size(self, now_ms: int) -> int:
        """Milliseconds the rate is taken over (Rate.windowSize)."""
        if not self.samples:
            self._first(now_ms)
        elif now_ms >= self.next_expiry:
            self._purge(now_ms)
        elapsed = now_ms - self.oldest_start
        full = elapsed // self.window_ms
        if full < self.num - 1:
            elapsed += (self.num - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        window = self.window_size(now_ms)          # purges first
        return self.total / (window / 1000.0)

    def peek(self, now_ms: int) -> float:
        """measure() without changing any sample (for metric scrapes from another thread)."""
        expire = self.expire_ms
        live = [(s[0], s[1]) for s in list(self.samples) if now_ms - s[2] < expire]
        start = min((st for _, st in live), default=now_ms)
        elapsed = now_ms - start
        full = elapsed // self.window_ms
        if full < self.num - 1:
            elapsed += (self.num - 1 - full) * self.window_ms
        return sum(v for v, _ in live) / (max(elapsed, 1) / 1000.0)

    def last_event_ms(self) -> int:
        return max((s[2] for s in self.samples), default=0)


def throttle_time_ms(rate: Rate, bound: float, now_ms: int) -> int:
    """0 while the rate is within bound; else Kafka's delay (QuotaUtils.throttleTime)."""
    window = rate.window_size(now_ms)
    observed = rate.total / (window / 1000.0)
    if observed <= bound:
        return 0
    return int(round((observed - bound) / bound * window))


class TokenBucket:
    __slots__ = ("num", "window_ms", "tokens", "last_ms")

    def __init__(self, num: int, window_ms: int):
        self.num = max(1, num)
        self.window_ms = max(1, window_ms)
        self.tokens = 0.0
        self.last_ms = 0             # as Kafka's: the first refill fills the bucket

    def _refill(self, quota: float, now_ms: int) -> None:
        burst = self.num * (self.window_ms / 1000.0) * quota
        self.tokens = min(burst, self.tokens + quota * (now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms

    def measure(self, quota: float, now_ms: int) -> float:
        self._refill(quota, now_ms)
        return self.tokens

    def record(self, quota: float, value: float, now_ms: int) -> None:
        self._refill(quota, now_ms)
        burst = self.num * (self.window_ms / 1000.0) * quota
        self.tokens = min(burst, self.tokens - value)

    @staticmethod
    def throttle_ms(tokens: float, quota: float) -> int:
        """Time to refill a negative bucket to zero (ControllerMutationQuotaManager)."""
        return int(round(-tokens / quota * 1000)) if tokens < 0 else 0
