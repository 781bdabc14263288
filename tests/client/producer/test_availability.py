"""partitioner.availability.timeout.ms on a fake network and clock: a node that has data waiting
but cannot take it for longer than the timeout gets no new null-key records until it drains."""
from __future__ import annotations

import random

from gregor.client.producer.hashing import murmur2, to_positive
from tests.client.producer.fakes import make_producer

# Topic "t": partitions 0 and 2 on node 1, 1 and 3 on node 2.
LEADERS = {"t": [1, 2, 1, 2]}
NODE2 = {1, 3}
VALUE = b"v" * 100        # ~9 records per 1000-byte batch


def producer(**conf):
    conf = {"acks": 1, "linger.ms": 0, "batch.size": 1000, "retry.backoff.ms": 1, **conf}
    p, net, clock = make_producer({"t": 4}, leaders=LEADERS, **conf)
    p._partitioner._rng = random.Random(7)      # a fixed sequence of draws
    return p, net, clock


def pump(p, net, clock, stuck=(), times=1):
    """Run the sender, then answer every Produce request except those to `stuck` nodes."""
    for _ in range(times):
        p._sender.run_once()
        for req in net.pending():
            if req.node_id not in stuck:
                net.answer_produce(req)
        clock.advance(0.01)


def stall_node2(p, net, clock, seconds):
    """Node 2 stops answering: its requests stay in flight (5 at most), then batches for its
    partitions 1 and 3 wait in the accumulator, undrained, for `seconds`."""
    for _ in range(7):
        for part in sorted(NODE2):
            for _ in range(9):
                p.send("t", VALUE, partition=part)
        pump(p, net, clock, stuck={2})
    assert len([r for r in net.pending() if r.node_id == 2]) == 5
    assert all(p._acc.queue_sizes("t")[part] for part in NODE2)
    steps = int(seconds / 0.01) + 1
    pump(p, net, clock, stuck={2}, times=steps)


def send_null_keys(p, net, clock, count, stuck=()):
    futs = []
    for i in range(count):
        futs.append(p.send("t", VALUE))
        if i % 9 == 8:
            pump(p, net, clock, stuck=stuck)
    return futs


def recover(p, net, clock):
    for _ in range(30):
        pump(p, net, clock)
        if not p._acc.has_undrained() and not net.pending():
            return
    raise AssertionError("the producer did not drain")


def partitions_of(futs):
    return [f.result(0).partition for f in futs]


def test_stalled_node_gets_no_null_key_records_until_it_drains_again():
    p, net, clock = producer(**{"partitioner.availability.timeout.ms": 100})
    avail = p._acc.node_availability
    stall_node2(p, net, clock, 0.05)
    assert avail.unavailable() == set()                # not yet past the timeout
    pump(p, net, clock, stuck={2}, times=6)
    assert avail.unavailable() == {2}
    stalled = send_null_keys(p, net, clock, 400, stuck={2})   # ~45 sticky switches
    assert avail.unavailable() == {2}
    # Node 2 answers again: drained, its partitions come back.
    recover(p, net, clock)
    assert avail.unavailable() == set()
    after = send_null_keys(p, net, clock, 400)
    recover(p, net, clock)
    stalled_parts = partitions_of(stalled)
    assert set(stalled_parts) <= {0, 2}                # node 1 took every null-key record
    assert len(set(stalled_parts)) == 2
    assert set(partitions_of(after)) & NODE2           # and node 2 gets them again


def test_zero_timeout_changes_nothing():
    p, net, clock = producer()                         # partitioner.availability.timeout.ms=0
    assert p._acc.node_availability is None
    seen = []
    inner = p._partitioner.update_load_stats
    p._partitioner.update_load_stats = lambda t, q, ids, n: (seen.append(list(ids)),
                                                             inner(t, q, ids, n))
    stall_node2(p, net, clock, 0.3)
    stalled = send_null_keys(p, net, clock, 400, stuck={2})
    recover(p, net, clock)
    assert seen and all(ids == [0, 1, 2, 3] for ids in seen)
    assert set(partitions_of(stalled)) & NODE2         # the stalled node still gets some


def test_adaptive_partitioning_off_ignores_the_timeout():
    # As in Java: the timeout only acts through adaptive partitioning's load statistics.
    p, net, clock = producer(**{"partitioner.availability.timeout.ms": 100,
                                "partitioner.adaptive.partitioning.enable": False})
    assert p._acc.node_availability is None
    stall_node2(p, net, clock, 0.3)
    stalled = send_null_keys(p, net, clock, 400, stuck={2})
    recover(p, net, clock)
    assert set(partitions_of(stalled)) & NODE2


def test_other_partitioners_ignore_the_timeout():
    p, _, _ = make_producer({"t": 4}, leaders=LEADERS, acks=1, partitioner="murmur2_random",
                            **{"partitioner.availability.timeout.ms": 100})
    assert p._acc.node_availability is None


def test_keyed_and_explicit_partition_records_still_go_to_the_stalled_node():
    p, net, clock = producer(**{"partitioner.availability.timeout.ms": 100})
    stall_node2(p, net, clock, 0.2)
    assert p._acc.node_availability.unavailable() == {2}
    keys = [b"key-%d" % i for i in range(40)]
    keyed = [p.send("t", VALUE, key=k) for k in keys]
    explicit = p.send("t", VALUE, partition=3)
    pump(p, net, clock, stuck={2}, times=3)
    recover(p, net, clock)
    want = [to_positive(murmur2(k)) % 4 for k in keys]
    assert set(want) & NODE2
    assert partitions_of(keyed) == want
    assert explicit.result(0).partition == 3


def test_bulk_null_key_chunks_avoid_the_stalled_node():
    p, net, clock = producer(**{"partitioner.availability.timeout.ms": 100})
    stall_node2(p, net, clock, 0.2)
    res = [p.send_batch("t", [VALUE] * 20) for _ in range(30)]
    recover(p, net, clock)
    assert {m.partition for r in res for m in r.result(0)} <= {0, 2}
