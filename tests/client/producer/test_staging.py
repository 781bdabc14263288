"""Keyed records staged and partitioned in bulk: same partitions as the default partitioner,
per-partition order kept (also when other sends to the topic interleave), futures and
callbacks follow their records."""
from __future__ import annotations

import random

from gregor.client.producer.partitioners import murmur2, to_positive
from tests.client.producer.fakes import batch_headers, make_producer


def drain_all(p, net, clock, offsets=None):
    """Run the sender until nothing is pending, answering every Produce; returns
    {partition: [values in log order]}."""
    log = {}
    for _ in range(200):
        clock.advance(0.01)
        p._sender.run_once()
        reqs = net.pending()
        for req in reqs:
            offs = {}
            for t, part, _hdr, vals in batch_headers(req):
                offs[(t, part)] = len(log.setdefault(part, []))
                log[part].extend(vals)
            net.answer_produce(req, offsets=offs)
        if not reqs and not p._acc.incomplete and not p._acc.stages:
            break
    return log


def test_staged_keys_land_where_murmur2_says_in_send_order():
    p, net, clock = make_producer({"t": 6}, acks=1)
    rnd = random.Random(3)
    keys = [rnd.randbytes(rnd.randrange(1, 30)) for _ in range(3000)]
    futs = [p.send("t", b"v%d" % i, key=k) for i, k in enumerate(keys)]
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
            p.send("t", v, key=key_for[part])           # staged
        else:
            p.send("t", v, partition=part)              # straight to the partition
        order.append((part, v))
    log = drain_all(p, net, clock)
    for part in range(3):
        assert log[part] == [v for pp, v in order if pp == part]


def test_flush_distributes_the_stage_and_callbacks_run_in_order():
    p, net, clock = make_producer({"t": 4}, acks=1, **{"linger.ms": 60000})
    seen = []
    for i in range(50):
        p.send("t", b"%d" % i, key=b"key-%d" % (i % 7),
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
        p.send("t", b"x" * 50, key=b"%d" % i)
    drain_all(p, net, clock)
    assert p._pool.available == p._pool.total
