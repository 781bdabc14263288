"""Kafka's windowed Rate, its throttle formula and the token bucket, on a virtual clock."""
from __future__ import annotations

import pytest

from gregor.broker.quotas.sensor import Rate, TokenBucket, throttle_time_ms


def test_rate_counts_at_least_num_minus_one_windows():
    r = Rate(11, 1000)
    r.record(1000, 0)
    # one value right away reads as 1000 over 10 s, not over 1 ms
    assert r.window_size(0) == 10_000
    assert r.measure(0) == pytest.approx(100.0)
    r.record(1000, 5_500)
    # 5.5 s elapsed = 5 whole windows, topped up to 10: 10.5 s
    assert r.measure(5_500) == pytest.approx(2000 / 10.5)
    # at 15 s the first sample (last event 11 s ago) has expired; 9.5 s since the second
    assert r.measure(15_000) == pytest.approx(1000 / 10.5)
    r.record(1000, 25_000)
    r.record(1000, 35_000)
    assert r.window_size(35_000) == 10_000


def test_old_samples_expire():
    r = Rate(2, 1000)
    r.record(500, 0)
    r.record(500, 1_000)
    assert r.measure(1_500) == pytest.approx(1000 / 1.5)
    assert r.measure(10_000) == 0.0
    assert r.peek(10_000) == 0.0


def test_throttle_time_is_kafkas_formula():
    """O * W / (W + X) = T: X = (O - T) / T * W (QuotaUtils.throttleTime)."""
    r = Rate(11, 1000)
    for t in range(0, 10_000, 100):            # 100 records of 100 bytes over 10 s
        r.record(100, t)
    assert throttle_time_ms(r, 1000.0, 9_900) == 0     # ~1000/s: within a 1000/s quota
    r.record(10_000, 9_950)                    # a burst of 10 kB
    observed = r.measure(9_950)
    window = r.window_size(9_950)
    expected = round((observed - 500.0) / 500.0 * window)
    assert throttle_time_ms(r, 500.0, 9_950) == expected > 0
    # the delay stretches the window so the observed amount averages to the quota
    assert observed * window / (window + expected) == pytest.approx(500.0, rel=1e-3)


def test_peek_agrees_with_measure_and_changes_nothing():
    r = Rate(11, 1000)
    for t in range(0, 20_000, 250):
        r.record(7, t)
    samples = [list(s) for s in r.samples]
    assert r.peek(21_000) == pytest.approx(r.measure(21_000))
    r2 = Rate(11, 1000)
    r2.samples = [list(s) for s in samples]
    r2.peek(50_000)
    assert r2.samples == samples


def test_token_bucket_admits_until_empty_then_throttles_until_refilled():
    b = TokenBucket(11, 1000)
    quota = 2.0                                # 2 mutations/s, burst 22
    assert b.measure(quota, 1_000_000) == pytest.approx(22.0)
    b.record(quota, 30, 1_000_000)             # a large request is admitted, going below 0
    tokens = b.measure(quota, 1_000_000)
    assert tokens == pytest.approx(-8.0)
    assert TokenBucket.throttle_ms(tokens, quota) == 4000
    assert b.measure(quota, 1_004_000) == pytest.approx(0.0)
    assert b.measure(quota, 1_100_000) == pytest.approx(22.0)     # capped at the burst


class _KafkaRate:
    """A line-by-line port of Kafka's Rate / SampledStat / WindowedSum, to check the O(1)
    bookkeeping of ours against."""

    def __init__(self, num, window):
        self.num, self.window, self.samples, self.current = num, window, [], 0

    def record(self, value, now):
        if not self.samples:
            self.samples.append([0.0, now, now])
        s = self.samples[self.current]
        if now - s[1] >= self.window:
            self.current = (self.current + 1) % (self.num + 1)
            if self.current >= len(self.samples):
                self.samples.append([0.0, now, now])
            else:
                self.samples[self.current][:] = [0.0, now, now]
            s = self.samples[self.current]
        s[0] += value
        s[2] = now

    def measure(self, now):
        for s in self.samples:
            if now - s[2] >= self.num * self.window:
                s[:] = [0.0, now, now]
        if not self.samples:
            self.samples.append([0.0, now, now])
        elapsed = now - min(s[1] for s in self.samples)
        full = elapsed // self.window
        if full < self.num - 1:
            elapsed += (self.num - 1 - full) * self.window
        return sum(s[0] for s in self.samples) / (max(elapsed, 1) / 1000.0)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(1, 2000),
       st.lists(st.tuples(st.integers(0, 3000), st.floats(-1e6, 1e6), st.booleans()),
                max_size=80))
def test_our_rate_measures_what_kafkas_does(num, window, events):
    ours, theirs, now = Rate(num, window), _KafkaRate(num, window), 0
    for gap, value, measure in events:
        now += gap
        if measure:
            assert ours.measure(now) == pytest.approx(theirs.measure(now), rel=1e-9, abs=1e-6)
        else:
            ours.record(value, now)
            theirs.record(value, now)
    assert ours.measure(now + 1) == pytest.approx(theirs.measure(now + 1), rel=1e-9, abs=1e-6)
