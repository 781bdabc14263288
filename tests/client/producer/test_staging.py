"""Keyed records staged and partitioned in bulk: same partitions as the default partitioner,
per-partition order kept (also when other sends to the topic interleave), futures and
callbacks follow their records. Records go through the Python send() (`_py_send`), which
stages keyed records; the compiled one hashes each key as it comes (test_fastpath.py)."""
from __future__ import annotations

import random

from gregor.client.producer.partitioners import murmur2, to_positive
from tests.client.producer.fakes import batch_headers, make_producer


def drain_all(p, net, clock, offsets=None, batches=None):
    """Run the sender until nothing is pending, answering every Produce; returns
    {partition: [values in log order]}. batches: a list that gets (wire bytes, values) of
    every batch, in the order sent."""
    log = {}
    for _ in range(200):
        clock.advance(0.01)
        p._sender.run_once()
        reqs = net.pending()
        for req in reqs:
            offs = {}
            for t, part, hdr, vals in batch_headers(req):
                offs[(t, part)] = len(log.setdefault(part, []))
                log[part].extend(vals)
                if batches is not None:
                    batches.append((hdr.size, vals))
            net.answer_produce(req, offsets=offs)
        if not reqs and not p._acc.incomplete and not p._acc.stages:
            break
    return log


def test_staged_keys_land_where_murmur2_says_in_send_order():
    p, net, clock = make_producer({"t": 6}, acks=1)
    rnd = random.Random(3)
    keys = [rnd.randbytes(rnd.randrange(1, 30)) for _ in range(3000)]
    futs = [p._py_send("t", b"v%d" % i, key=k) for i, k in enumerate(keys)]
    assert p._acc.stages or p._acc.incomplete
    log = drain_all(p, net, clock)
    for i, (k, f) in enumerate(zip(keys, futs)):
        md = f.result(0)
        assert md.partition == to_positive(murmur2(k)) % 6
        assert log[md.partition][md.offset] == b"v%d" % i
    for part, vals in log.items():
        idx = [int(v[1:]) for v in vals]
        assert idx == sorted(idx)                       # send order within the partition


def test_interleaved_explicit_partition_sends_keep_order():
    p, net, clock = make_producer({"t": 3}, acks=1)
    key_for = {}
    k = 0
    while len(key_for) < 3:                              # a key for each partition
        key = b"k%d" % k
        key_for.setdefault(to_positive(murmur2(key)) % 3, key)
        k += 1
    order = []
    for i in range(300):
        part = i % 3
        v = b"%d" % i
        if i % 2:
            p._py_send("t", v, key=key_for[part])           # staged
        else:
            p._py_send("t", v, partition=part)              # straight to the partition
        order.append((part, v))
    log = drain_all(p, net, clock)
    for part in range(3):
        assert log[part] == [v for pp, v in order if pp == part]


def test_flush_distributes_the_stage_and_callbacks_run_in_order():
    p, net, clock = make_producer({"t": 4}, acks=1, **{"linger.ms": 60000})
    seen = []
    for i in range(50):
        p._py_send("t", b"%d" % i, key=b"key-%d" % (i % 7),
               callback=lambda md, err, i=i: seen.append((i, md.partition)))
    assert p._acc.stages
    p._acc.flush_stages()
    p._acc.begin_flush()
    drain_all(p, net, clock)
    by_part = {}
    for i, part in seen:
        by_part.setdefault(part, []).append(i)
    assert sorted(i for i, _ in seen) == list(range(50))
    assert all(v == sorted(v) for v in by_part.values())


def test_memory_of_a_distributed_stage_is_returned():
    p, net, clock = make_producer({"t": 6}, acks=1)
    for i in range(2000):
        p._py_send("t", b"x" * 50, key=b"%d" % i)
    drain_all(p, net, clock)
    assert p._pool.available == p._pool.total


def _records_by_partition(req_list):
    """{partition: [(key, value, timestamp)]} in log order from answered Produce requests."""
    from gregor.protocol.records.batch import decode_batches
    out = {}
    for req in req_list:
        for _t, part, data in req.partitions():
            for b in decode_batches(data):
                out.setdefault(part, []).extend((r.key, r.value, r.timestamp)
                                                for r in b.records)
    return out


def test_distribute_matches_the_per_record_partitioner_differential():
    """Staged partitioning (numpy murmur2 over a whole stage) must pick exactly what the
    per-record default partitioner picks, for keys of any length (empty too), null and
    varied values, any partition count, and stages of any size."""
    from gregor.client.producer.batch import ProducerBatch
    from gregor.client.producer.partitioners import BuiltInPartitioner
    from gregor.client.producer.staging import KeyedStage, distribute
    per_record = BuiltInPartitioner()
    rnd = random.Random(11)
    for n in (2, 3, 6, 7, 13, 64):
        for count in (1, 2, 5, 200, 1500):
            st = KeyedStage("t", n, 1 << 30, 777, 1.0)
            expect = []
            for i in range(count):
                key = rnd.randbytes(rnd.choice((0, 1, 3, 4, 5, 10, 17, 40)))
                value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.randrange(0, 60))
                st.keys.append(key)
                st.values.append(value)
                st.timestamps.append(1.7e12 + i)
                expect.append((per_record("t", key, value, n, list(range(n))), key, value,
                               1.7e12 + i))
            opened = [None] * n
            # One partition already has an open batch: its share is appended after its record.
            early = ProducerBatch("t", 1, 0.5, 0, 1 << 20, 0)
            early.try_append(5.0, b"early", b"x", None, None)
            opened[1] = early
            new = distribute(st, opened, 1 << 30, 0, 16384, lambda b: True)
            batches = {b.partition: b for b in new}
            batches[1] = early
            assert all(b.partition != 1 for b in new)
            got = {p: list(zip(b.keys, b.values, b.timestamps)) for p, b in batches.items()}
            assert got[1][0] == (b"early", b"x", 5.0)
            got[1] = got[1][1:]
            want = {}
            for p, k, v, ts in expect:
                want.setdefault(p, []).append((k, v, ts))
            assert {p: recs for p, recs in got.items() if recs} == want
            # Every staged future routes to its record: partition and index in that batch.
            for i, (p, k, v, ts) in enumerate(expect):
                r, j = st.result.resolve(i)
                assert r.partition == p
                assert (batches[p].keys[j], batches[p].values[j]) == (k, v)
            # The reservation moved with the records (what is left stays on the stage for
            # the accumulator to give back), none lost or made up.
            assert sum(b.reserved for b in new) + early.reserved + st.reserved == 777


def test_producer_staging_agrees_with_the_per_record_partitioner_across_many_stages():
    p, net, clock = make_producer({"t": 5}, acks=1)
    rnd = random.Random(5)
    keys = [rnd.randbytes(rnd.randrange(1, 20)) for _ in range(12000)]  # several full stages
    futs = [p._py_send("t", b"%d" % i, key=k) for i, k in enumerate(keys)]
    log = drain_all(p, net, clock)
    partitioner = p._partitioner
    for i, (k, f) in enumerate(zip(keys, futs)):
        md = f.result(0)
        assert md.partition == partitioner("t", k, None, 5, [0, 1, 2, 3, 4])
        assert log[md.partition][md.offset] == b"%d" % i


def test_staged_records_keep_their_timestamps():
    p, net, clock = make_producer({"t": 4}, acks=1)
    sent = []
    for i in range(300):
        ts = 1_600_000_000_000 + 7 * i if i % 3 else None
        f = p._py_send("t", b"%d" % i, key=b"k%d" % (i % 11), timestamp_ms=ts)
        sent.append((ts, f))
    reqs = []
    for _ in range(50):
        clock.advance(0.01)
        p._sender.run_once()
        pending = net.pending()
        for req in pending:
            reqs.append(req)
            net.answer_produce(req)
        if not pending and not p._acc.incomplete and not p._acc.stages:
            break
    wire = _records_by_partition(reqs)
    for ts, f in sent:
        md = f.result(0)
        assert wire[md.partition][md.offset][2] == md.timestamp
        if ts is not None:
            assert md.timestamp == ts


def test_keyed_records_between_null_key_ones_do_not_tie_up_a_stage_of_memory_each():
    """Each keyed record here is staged alone and flushed by the null-key record after it;
    what the stage reserved beyond its batches goes back to the pool at once (it used to
    stay on a batch until acknowledged: ~200 KB a record on 3 partitions)."""
    p, net, clock = make_producer({"t": 3}, acks=1)
    p.partitions_for("t")
    for i in range(100):
        p._py_send("t", b"keyed", key=b"k%d" % i)    # the Python path stages keyed records
        p._py_send("t", b"unkeyed")
    assert p._pool.total - p._pool.available <= 8 * 16384
    log = drain_all(p, net, clock)
    assert sum(len(vals) for vals in log.values()) == 200
    assert p._pool.available == p._pool.total
