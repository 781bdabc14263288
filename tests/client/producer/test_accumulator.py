"""RecordAccumulator, sans I/O: batching, readiness, draining, re-queueing, expiry."""
from __future__ import annotations

from gregor.client.metadata import Metadata
from gregor.client.producer.accumulator import PY_RECORD_OVERHEAD, RecordAccumulator
from gregor.client.producer.buffer_pool import BufferPool


def metadata(parts=2, leader=1):
    md = Metadata()
    md.update({"brokers": [{"node_id": leader, "host": "h", "port": 1}],
               "topics": [{"error_code": 0, "name": "t", "partitions": [
                   {"error_code": 0, "partition_index": i, "leader_id": leader,
                    "replica_nodes": [], "isr_nodes": []} for i in range(parts)]}]}, 0.0)
    return md


def make(batch_size=1000, linger=0.005, memory=100000, delivery=120.0):
    pool = BufferPool(memory)
    acc = RecordAccumulator(batch_size=batch_size, linger_s=linger, compression=0, pool=pool,
                            delivery_timeout_s=delivery,
                            clock=lambda: 0.0)
    return acc, pool


def test_records_fill_batches_and_reserve_memory():
    acc, pool = make(batch_size=1000)
    futs = [acc.append("t", 0, 1, None, b"x" * 100, None, None, 1, now=0.0,
                       may_grow=False)[0] for _ in range(20)]
    dq = acc.topics["t"][0]
    assert len(dq) == 3                               # 112 bytes a record, ~8 per batch
    assert sum(b.record_count for b in dq) == 20
    sealed = sum(b.record_count for b in list(dq)[:2])
    # batch.size per batch, plus the Python overhead of the two batches already sealed.
    assert pool.available == 100000 - 3 * 1000 - sealed * PY_RECORD_OVERHEAD
    assert [f._index for f in futs[:9]] == list(range(8)) + [0]


def test_ready_waits_for_linger_unless_full_or_flushing():
    acc, _ = make(batch_size=1000, linger=0.005)
    md = metadata()
    acc.append("t", 0, 1, None, b"x", None, None, 1, now=0.0)
    r = acc.ready(md, now=0.001)
    assert r.nodes == set() and abs(r.next_delay - 0.004) < 1e-9
    assert acc.ready(md, now=0.005).nodes == {1}
    acc.begin_flush()
    assert acc.ready(md, now=0.001).nodes == {1}
    acc.end_flush()
    for _ in range(20):                               # a full batch is ready at once
        acc.append("t", 1, 1, None, b"x" * 100, None, None, 1, now=0.0)
    assert acc.ready(md, now=0.0).nodes == {1}


def test_unknown_leader_is_reported():
    acc, _ = make()
    acc.append("u", 0, 1, None, b"x", None, None, 1, now=0.0)
    assert acc.ready(metadata(), now=1.0).unknown_leader_topics == {"u"}


def test_drain_takes_one_batch_per_partition_within_request_size():
    acc, _ = make(batch_size=1000)
    for p in (0, 1):
        for _ in range(20):
            acc.append("t", p, 1, None, b"x" * 100, None, None, 1, now=0.0)
    small = acc.drain(metadata(), {1}, max_request_size=100, now=1.0)
    assert len(small[1]) == 1                          # the first batch always goes
    assert small[1][0].record_count == 8               # and alone: no room to merge
    out = acc.drain(metadata(), {1}, max_request_size=10**6, now=1.0)
    assert sorted(b.partition for b in out[1]) == [0, 1]
    assert all(b.data is not None for b in out[1])    # encoded once, at drain


def test_queued_batches_merge_at_drain_and_futures_follow():
    acc, pool = make(batch_size=1000)
    futs = [acc.append("t", 0, 1000 + i, None, b"%03d" % i + b"x" * 97, None, None, 1,
                       now=0.0)[0] for i in range(20)]
    [b] = acc.drain(metadata(1), {1}, max_request_size=10**6, now=1.0)[1]
    assert b.record_count == 20 and not acc.has_undrained()
    assert acc.incomplete == {b}
    b.complete(500, -1, None)
    mds = [f.result(0) for f in futs]
    assert [m.offset for m in mds] == list(range(500, 520))
    assert [m.timestamp for m in mds] == list(range(1000, 1020))
    acc.deallocate(b)
    assert pool.available == pool.total


def test_reenqueue_goes_to_the_front_in_sequence_order():
    acc, _ = make(batch_size=200)
    for i in range(6):
        acc.append("t", 0, 1, None, b"%d" % i * 150, None, None, 1, now=0.0)
    md = metadata(1)
    first = acc.drain(md, {1}, 200, 1.0)[1][0]      # small requests: no merging
    second = acc.drain(md, {1}, 200, 1.0)[1][0]
    first.base_sequence, second.base_sequence = 0, 1
    acc.reenqueue(second, 1.0, 0.1)
    acc.reenqueue(first, 1.0, 0.1)
    dq = acc.topics["t"][0]
    assert dq[0] is first and dq[1] is second
    assert acc.ready(md, 1.05).nodes == set()          # backing off
    assert acc.ready(md, 1.2).nodes == {1}


def test_expired_batches_are_removed():
    acc, _ = make(delivery=1.0)
    acc.append("t", 0, 1, None, b"x", None, None, 1, now=0.0)
    assert acc.expired_batches(0.5) == []
    expired = acc.expired_batches(1.0)
    assert len(expired) == 1 and not acc.has_undrained()
    # The expired batch no longer takes records: the next one opens a new batch.
    _, new = acc.append("t", 0, 1, None, b"x", None, None, 1, now=1.0)
    assert new is not None


def test_record_larger_than_batch_size_gets_its_own_batch():
    acc, pool = make(batch_size=100)
    _, new = acc.append("t", 0, 1, None, b"x" * 500, None, None, 1, now=0.0)
    assert new.record_count == 1 and new.reserved >= 500
    assert pool.available == 100000 - new.reserved


def test_open_batch_grows_instead_of_splitting_under_back_pressure():
    acc, pool = make(batch_size=1000)
    for _ in range(40):
        acc.append("t", 0, 1, None, b"x" * 100, None, None, 1, now=0.0)
    dq = list(acc.topics["t"][0])
    # The first batch waits; the second grows (in batch.size steps) rather than opening more.
    assert len(dq) == 2 and dq[0].record_count == 8 and dq[1].record_count == 32
    assert dq[1].max_bytes == 4000 and dq[1].reserved == 4000
    assert pool.available == pool.total - 1000 - 4000 - 8 * PY_RECORD_OVERHEAD
    out = acc.drain(metadata(1), {1}, 10**6, now=1.0)[1]
    assert [b.record_count for b in out] == [40]          # merged at drain
