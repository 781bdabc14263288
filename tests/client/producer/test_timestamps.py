"""Record timestamps through send(): clock readings (kept as float milliseconds until the
batch is encoded) and callers' timestamps come out as the same int milliseconds in the
encoded batch and in RecordMetadata; timestamps a batch cannot hold exactly are refused
before anything is queued."""
from __future__ import annotations

import time
from array import array

import numpy as np
import pytest

from gregor.client.producer.batch import TIMESTAMP_LIMIT, ms_timestamps
from gregor.protocol.records.batch import decode_batches
from tests.client.producer.fakes import make_producer


def sent_records(p, net, clock):
    """Run the sender once, answer every Produce; [(partition, record)] in log order."""
    clock.advance(1.0)
    p._sender.run_once()
    out = []
    for req in net.pending():
        for _t, part, data in req.partitions():
            for b in decode_batches(data):
                out.extend((part, r) for r in b.records)
        net.answer_produce(req)
    return out


def test_clock_timestamps_are_whole_milliseconds_on_the_wire_and_in_metadata():
    p, net, clock = make_producer({"t": 1}, acks=1)
    before = time.time_ns() // 1_000_000
    futs = [p.send("t", b"v%d" % i, key=b"k") for i in range(500)]
    after = time.time_ns() // 1_000_000
    recs = sent_records(p, net, clock)
    assert len(recs) == 500
    for f, (_part, r) in zip(futs, recs):
        md = f.result(0)
        assert type(md.timestamp) is int
        assert md.timestamp == r.timestamp
        assert before <= md.timestamp <= after


@pytest.mark.parametrize("ts", [0, 1, 1_700_000_000_123, TIMESTAMP_LIMIT - 1])
def test_callers_timestamps_are_kept_exactly(ts):
    p, net, clock = make_producer({"t": 2}, acks=1)
    futs = [p.send("t", b"a", key=b"k", timestamp_ms=ts),        # staged (keyed, 2 partitions)
            p.send("t", b"b", partition=1, timestamp_ms=ts),     # straight to a partition
            p.send("t", b"c", partition=0, timestamp_ms=ts, headers=[("h", b"1")])]
    recs = sent_records(p, net, clock)
    assert sorted(r.timestamp for _p, r in recs) == [ts] * 3
    assert [f.result(0).timestamp for f in futs] == [ts] * 3


def test_other_timestamp_types_are_converted():
    p, net, clock = make_producer({"t": 1}, acks=1)
    futs = [p.send("t", b"a", timestamp_ms=np.int64(1_234_567)),
            p.send("t", b"b", timestamp_ms=1_234_567.9),           # floor, like the clock
            p.send("t", b"c", timestamp_ms=-5),                     # allowed, as before
            p.send("t", b"d", timestamp_ms=np.float32(1_234_567))]
    recs = sent_records(p, net, clock)
    assert [r.timestamp for _p, r in recs] == [1_234_567, 1_234_567, -5, 1_234_567]
    assert [f.result(0).timestamp for f in futs] == [1_234_567, 1_234_567, -5, 1_234_567]


@pytest.mark.parametrize("bad, error", [(TIMESTAMP_LIMIT, ValueError),
                                        (-TIMESTAMP_LIMIT, ValueError),
                                        (float("nan"), ValueError),
                                        ("1700000000000", TypeError)])
def test_timestamps_a_batch_cannot_hold_are_refused_and_nothing_is_queued(bad, error):
    p, net, clock = make_producer({"t": 3}, acks=1)
    with pytest.raises(error, match="timestamp_ms"):
        p.send("t", b"v", key=b"k", timestamp_ms=bad)
    # Nothing half-done: the accumulator's lock is free and later sends go through.
    f = p.send("t", b"ok", key=b"k")
    p._acc.flush_stages()
    recs = sent_records(p, net, clock)
    assert [r.value for _p, r in recs] == [b"ok"]
    assert f.result(0).offset == 0


def test_clock_and_caller_timestamps_mixed_in_one_batch():
    p, net, clock = make_producer({"t": 1}, acks=1)
    given = [None, 5, None, 1_800_000_000_000, None]
    futs = [p.send("t", b"%d" % i, timestamp_ms=ts) for i, ts in enumerate(given)]
    recs = sent_records(p, net, clock)
    assert len(recs) == 5
    for ts, f, (_part, r) in zip(given, futs, recs):
        assert f.result(0).timestamp == r.timestamp
        if ts is not None:
            assert r.timestamp == ts


def test_ms_timestamps_truncates_like_the_metadata():
    ts = array("d", [1.0, 1.999, 2.0, 1_763_790_000_123.9998, 0.0])
    assert ms_timestamps(ts).tolist() == [1, 1, 2, 1_763_790_000_123, 0]
    assert [int(t) for t in ts] == ms_timestamps(ts).tolist()

