"""The session cache: epochs, ids, LRU and Kafka's eviction rules, on a manual clock."""
import random

import pytest

from gregor.broker.sessions import (FINAL_EPOCH, INITIAL_EPOCH, INT32_MAX, SessionCache,
                                    next_epoch)


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self):
        return self.ms


def cache(slots=3, eviction_ms=1000):
    clock = Clock()
    return SessionCache(max_slots=slots, eviction_ms=eviction_ms, clock=clock,
                        rng=random.Random(7)), clock


def test_next_epoch_follows_kafka():
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1          # wraps past 0, which would mean "new session"
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_create_draws_distinct_positive_ids_at_epoch_one():
    c, _ = cache(slots=50)
    sessions = [c.create(size=1, payload=i) for i in range(50)]
    ids = {s.key for s in sessions}
    assert len(ids) == 50 and all(0 < i <= INT32_MAX for i in ids)
    assert all(s.epoch == 1 for s in sessions)
    assert c.get(sessions[3].key).payload == 3
    assert c.partitions == 50


def test_explicit_keys_and_replacement():
    c, _ = cache()
    a = c.create(size=2, key=("group", "member"))
    b = c.create(size=5, key=("group", "member"))
    assert len(c) == 1 and c.get(("group", "member")) is b and a is not b
    assert c.partitions == 5
    assert c.remove(("group", "member")) is b and len(c) == 0 and c.partitions == 0


def test_touch_updates_size_and_recency():
    c, clock = cache()
    s = c.create(size=2)
    clock.ms += 10
    c.touch(s, size=7)
    assert s.last_used_ms == clock.ms and c.partitions == 7


def test_full_cache_refuses_an_unprivileged_newcomer_while_sessions_are_fresh():
    c, clock = cache(slots=2)
    c.create(size=1)
    c.create(size=1)
    clock.ms += 500                               # not yet stale, not yet old
    assert c.create(size=100) is None and len(c) == 2 and c.evictions == 0


def test_stale_lru_session_is_evicted_first():
    c, clock = cache(slots=2)
    a = c.create(size=1)
    b = c.create(size=1)
    clock.ms += 600
    c.touch(a)                                    # b is now the least recently used
    clock.ms += 600                               # b unused for 1200 > 1000 ms
    n = c.create(size=1)
    assert n is not None and b.key not in c and a.key in c and c.evictions == 1


def test_privileged_newcomer_evicts_the_smallest_unprivileged_session():
    c, clock = cache(slots=3)
    big = c.create(size=10)
    small = c.create(size=2)
    mid = c.create(size=5)
    clock.ms += 10
    for s in (big, small, mid):
        c.touch(s)
    f = c.create(size=1, privileged=True)
    assert f is not None and small.key not in c and big.key in c and mid.key in c


def test_privileged_sessions_are_kept_from_newcomers_until_old():
    c, clock = cache(slots=1)
    f = c.create(size=1, privileged=True)
    clock.ms += 10
    c.touch(f)
    assert c.create(size=50, privileged=True) is None        # fresh privileged: kept
    assert c.create(size=50) is None
    clock.ms += 995                               # f is older than eviction_ms, yet in use
    c.touch(f)
    assert c.create(size=1) is None               # privileged beats unprivileged
    g = c.create(size=2, privileged=True)         # larger privileged beats it
    assert g is not None and f.key not in c


def test_old_sessions_are_evictable_by_a_larger_unprivileged_newcomer_only():
    c, clock = cache(slots=2)
    a = c.create(size=4)
    b = c.create(size=6)
    clock.ms += 1001
    c.touch(a)
    c.touch(b)                                    # both used just now, both old
    assert c.create(size=3) is None               # smaller than the least valuable (4)
    assert c.create(size=4) is None               # equal: the incumbent stays
    n = c.create(size=5)
    assert n is not None and a.key not in c and b.key in c


def test_zero_slots_never_creates():
    c, _ = cache(slots=0)
    assert c.create(size=1) is None and c.create(size=1, privileged=True) is None


def test_negative_slots_rejected():
    with pytest.raises(ValueError):
        SessionCache(max_slots=-1)
