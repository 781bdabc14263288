"""The cleaner's decisions without files: the key map and which records survive."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from gregor.log.cleaner.decide import Decider
from gregor.log.cleaner.throttle import Throttler
from gregor.log.cleaner.offset_map import ENTRY_BYTES, OffsetMap, digests_of
from gregor.protocol.records.batch import decode_batch, encode_batch
from gregor.protocol.records.header import parse_header


def _batches(writes, per_batch):
    """[(bytes, header)] with offsets assigned from 0; writes are (key, value) pairs."""
    out, offset = [], 0
    for i in range(0, len(writes), per_batch):
        chunk = writes[i:i + per_batch]
        b = encode_batch([(1_000 + offset + j, k, v, None) for j, (k, v) in enumerate(chunk)],
                         base_offset=offset)
        out.append((b, parse_header(b)))
        offset += len(chunk)
    return out


def _one_pass(batches, buffer, first_dirty, drop_tombstones):
    m = OffsetMap(buffer)
    d = Decider(m)
    m.latest_offset = first_dirty - 1
    for b, h in batches:
        if h.last_offset < first_dirty:
            continue
        if not d.map_batch(b, 0, h):
            break
    end = d.finish_mapping()
    out = []
    for b, h in batches:
        kept = d.filter_batch(b, 0, h, drop_tombstones)
        if kept is not None:
            out.append((kept, parse_header(kept)))
    return out, end


writes_st = st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d"]),
                               st.one_of(st.none(), st.binary(max_size=4))),
                     min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(writes=writes_st, per_batch=st.integers(1, 7), keys_fit=st.integers(1, 5),
       drop=st.booleans())
def test_passes_leave_the_latest_record_per_key_at_its_offset(writes, per_batch, keys_fit,
                                                              drop):
    batches = _batches(writes, per_batch)
    buffer = (keys_fit * per_batch + per_batch) * ENTRY_BYTES * 2    # may hold too few keys
    checkpoint, end_all = 0, len(writes)
    for _ in range(200):
        if checkpoint >= end_all:
            break
        batches, checkpoint = _one_pass(batches, buffer, checkpoint, drop)
    assert checkpoint == end_all
    got = [(r.offset, r.key, r.value) for b, _ in batches for r in decode_batch(b, 0)]
    latest = {k: (o, v) for o, (k, v) in enumerate(writes)}
    want = sorted((o, k, v) for k, (o, v) in latest.items() if not (drop and v is None))
    assert got == want
    for b, h in batches:                  # batches keep their offsets and timestamps
        for r in decode_batch(b, 0):
            assert r.timestamp == 1_000 + r.offset


def test_offset_map_is_bounded_and_reports_full():
    m = OffsetMap(100 * ENTRY_BYTES)
    assert m.capacity == 90
    hi, lo = digests_of([b"k%d" % i for i in range(50)])
    assert m.try_put(hi, lo, np.arange(50, dtype=np.int64), 49)
    hi2, lo2 = digests_of([b"x%d" % i for i in range(50)])
    assert not m.try_put(hi2, lo2, np.arange(50, 100, dtype=np.int64), 99)
    assert m.full and m.latest_offset == 49 and len(m) == 50
    assert m.get(b"k7") == 7 and m.get(b"x1") == -1
    # keys already held cost nothing once merged: the map holds digests, not records
    assert m.try_put(hi[:30], lo[:30], np.arange(100, 130, dtype=np.int64), 129)
    assert len(m) == 50 and m.get(b"k7") == 107 and m.get(b"k40") == 40
    m.clear()
    assert len(m) == 0 and not m.full


def test_offset_map_never_matches_on_half_a_digest():
    m = OffsetMap(1 << 16)
    hi = np.array([5, 5, 9], dtype=np.uint64)
    lo = np.array([1, 2, 3], dtype=np.uint64)
    m.try_put(hi, lo, np.array([10, 11, 12], dtype=np.int64), 12)
    got = m.lookup(np.array([5, 5, 9, 9], dtype=np.uint64),
                   np.array([1, 2, 3, 4], dtype=np.uint64))
    assert got.tolist() == [-1, -1, 12, -1]       # shared first half: absent (keeps records)


def test_throttler_sleeps_to_hold_the_rate():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s
    t = Throttler(1000.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):
        t(500)
    assert abs(sum(slept) - 5.0) < 0.6
