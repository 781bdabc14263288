"""send()'s fast path and the accumulator behind it: sticky choices checked against the
partition count, open batches that grow by doubling under back-pressure (with their memory
accounted and returned)."""
from __future__ import annotations

from gregor.client.producer.accumulator import MERGE_LIMIT
from tests.client.producer.fakes import make_producer
from tests.client.producer.test_staging import drain_all
from tests.client.producer.test_timestamps import sent_records


def test_sticky_partition_beyond_a_shrunken_topic_is_chosen_again():
    """send()'s fast path must not use a sticky partition the topic no longer has (a topic
    deleted and recreated with fewer partitions)."""
    p, net, clock = make_producer({"t": 6}, acks=1, **{"max.block.ms": 500})
    net.metadata.update({
        "brokers": [{"node_id": 1, "host": "fake", "port": 1}],
        "topics": [{"error_code": 0, "name": "t", "partitions": [
            {"error_code": 0, "partition_index": i, "leader_id": 1, "replica_nodes": [1],
             "isr_nodes": [1]} for i in range(2)]}]}, clock())
    p.send("t", b"first")                             # learns the count: 2
    p._sticky_state["t"] = [5, 0]                     # a choice from before the shrink
    futs = [p.send("t", b"w") for _ in range(4)]
    recs = sent_records(p, net, clock)
    assert all(f.result(0).partition < 2 for f in futs)
    assert sum(1 for _part, r in recs if r.value == b"w") == 4


def test_open_batch_doubles_under_back_pressure_and_memory_comes_back():
    p, net, clock = make_producer({"t": 1}, acks=1, **{"batch.size": 16384})
    acc = p._acc
    grown = []
    for i in range(20000):                      # ~2.4 MB, nothing drained meanwhile
        p.send("t", b"v" * 100, key=b"%010d" % i)
        b = acc.open["t"][0]
        if len(acc.topics["t"][0]) == 2 and (not grown or grown[-1] != b.max_bytes):
            grown.append(b.max_bytes)
    # The first batch fills at batch.size; the one behind it doubles (a few trips through the
    # slow path instead of one per batch.size) up to the merge limit; then the next one.
    assert grown == [16384, 32768, 65536, 131072, 262144, 524288, MERGE_LIMIT]
    assert [b.max_bytes for b in acc.topics["t"][0]] == [16384, MERGE_LIMIT, MERGE_LIMIT, 524288]
    assert all(b.size <= b.max_bytes for b in acc.topics["t"][0])
    log = drain_all(p, net, clock)
    assert log[0] == [b"v" * 100] * 20000
    assert p._pool.available == p._pool.total
