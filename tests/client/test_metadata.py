"""The metadata cache: updates, leader lookups, max age, refresh requests."""
from __future__ import annotations

from gregor.client.metadata import Metadata


def body(leader=1, topics=("t",), parts=3, error=0):
    return {"brokers": [{"node_id": 1, "host": "h", "port": 1}, {"node_id": 2, "host": "h2",
                                                                 "port": 2}],
            "controller_id": 1, "cluster_id": "c",
            "topics": [{"error_code": error, "name": t, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": i, "leader_id": leader,
                 "leader_epoch": 4, "replica_nodes": [1, 2], "isr_nodes": [1]}
                for i in range(parts)]} for t in topics]}


def test_update_and_lookups():
    md = Metadata(1000)
    md.add_topic("t")
    assert md.needs_update(0.0)
    md.update(body(), now=10.0)
    assert md.partitions_for("t") == [0, 1, 2]
    assert md.leader_for("t", 1) == 1
    assert md.leader_for("t", 9) == -1 and md.leader_for("nope", 0) == -1
    assert md.brokers[2].host == "h2" and md.controller_id == 1
    assert md.partition_info("t", 0).leader_epoch == 4
    assert md.available_partitions("t") == [0, 1, 2]
    assert not md.needs_update(10.5)
    assert md.needs_update(11.0)                  # metadata.max.age.ms passed
    assert md.time_to_next_update(10.25) == 0.75


def test_request_update_and_version():
    md = Metadata(60000)
    md.update(body(), now=0.0)
    v = md.version
    md.request_update()
    assert md.needs_update(0.1)
    md.update(body(leader=2), now=0.2)
    assert md.version == v + 1 and md.leader_for("t", 0) == 2
    assert not md.needs_update(0.3)


def test_leaderless_partition_or_topic_error_asks_again_soon():
    md = Metadata(60000)
    md.update(body(leader=-1), now=0.0)
    assert md.needs_update(0.0)
    assert md.available_partitions("t") == []
    md.update(body(topics=("u",), parts=0, error=3), now=1.0)
    assert md.topic_error("u").name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert md.partitions_for("u") is None
    assert md.needs_update(1.0)


def test_listeners_and_wait():
    md = Metadata()
    seen = []
    md.listeners.append(lambda: seen.append(md.version))
    v = md.version
    md.update(body(), now=0.0)
    assert seen == [v + 1]
    assert md.wait_for_version(v, 0.01)
    assert not md.wait_for_version(md.version, 0.01)


def test_idle_topics_are_forgotten_at_the_next_refresh():
    md = Metadata(1000, idle_ms=5000)
    calls = []
    md.listeners.append(lambda: calls.append(1))
    for t in ("busy", "idle", "never-touched"):
        md.add_topic(t)
    md.update(body(topics=("busy", "idle", "never-touched")), now=0.0)
    md.touch("busy", 0.0)
    md.touch("idle", 0.0)
    assert md.retire_idle(4.0) == []
    md.touch("busy", 4.0)
    calls.clear()
    assert md.retire_idle(6.0) == ["idle"]
    assert md.tracked_topics == ["busy", "never-touched"]
    assert md.partition_count("idle") is None and md.partition_count("busy") == 3
    assert calls == [1]                              # the producer drops its caches
    md.add_topic("idle")                              # used again: asked for again
    assert md.needs_update(6.0) and "idle" in md.tracked_topics


def test_without_idle_ms_nothing_is_retired():
    md = Metadata(1000)
    md.add_topic("t")
    md.touch("t", 0.0)
    assert md.retire_idle(10_000.0) == [] and md.tracked_topics == ["t"]


def test_the_producer_touches_topics_it_sends_to():
    from tests.client.producer.fakes import make_producer
    p, net, clock = make_producer({"t": 1}, acks=1, **{"linger.ms": 0})
    p.send("t", b"v")
    clock.advance(1.0)
    p._sender.run_once()
    assert net.metadata._last_used["t"] == clock()
