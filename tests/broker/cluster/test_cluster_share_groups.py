"""Share groups on a cluster: the share-partition's state follows its leadership. A share
consumer (confluent-kafka's ShareConsumer, explicit acknowledgement) reads a replicated
partition while records are produced; the partition's leader is killed with SIGKILL (or
stopped with a controlled shutdown, which moves its leaderships first) while the consumer
holds acquired, unacknowledged records. The new leader reads the state from the
share coordinator (ReadShareGroupState, or its own `__share_group_state` partition), so, as
Kafka's at-least-once semantics say:

- no record whose ACCEPT the consumer saw confirmed (commit_sync) before the kill is
  delivered again;
- every record the producer had acknowledged is delivered (the ones in flight at the kill
  come back, their delivery count at least 1);
- the consumer's membership moves with the group coordinator: the new one has it from
  `__consumer_offsets` and the consumer carries on (test_cluster_share_group_membership.py).
"""
from __future__ import annotations

import time
import uuid

import pytest

from tests.broker.cluster.test_replication import create_topic, new_cluster, state

pytestmark = pytest.mark.timeout(300)
WAIT_S = 120             # liveness bounds only
SETTINGS = {"share.coordinator.state.topic.num.partitions": 3,
            "group.share.min.session.timeout.ms": 45000}


def producer(bootstrap):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                     "message.timeout.ms": 90000})


def produce(p, topic, values) -> None:
    for v in values:
        p.produce(topic, v, partition=0)
    assert p.flush(90) == 0


def share_consumer(c, group):
    from confluent_kafka import ShareConsumer
    return ShareConsumer({"bootstrap.servers": c.bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit",
                          "topic.metadata.refresh.interval.ms": 1000})


def start_state_topic(c) -> None:
    """A throwaway share group acknowledges one record: `__share_group_state` is created."""
    p = producer(c.bootstrap)
    cons = share_consumer(c, "warm-up")
    from confluent_kafka import AcknowledgeType
    try:
        cons.subscribe(["warm"])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            produce(p, "warm", [b"w"])
            got = [m for m in cons.poll(0.5) if not m.error()]
            for m in got:
                cons.acknowledge(m, AcknowledgeType.ACCEPT)
            if got and all(e is None for e in (cons.commit_sync(30) or {}).values()):
                break
        c.wait_for(lambda: all(state(c, "__share_group_state", k)["leader"] >= 0
                               for k in range(3)), WAIT_S, what="__share_group_state leaders")
    finally:
        cons.close()


def group_coordinated_elsewhere(c, topic: str) -> str:
    """A group id whose share state for topic-0 is coordinated by a broker other than the
    partition's leader: its writes go over WriteShareGroupState."""
    from gregor.broker.cluster.znodes import topic_id_bytes
    from gregor.broker.share.state_records import partition_for
    tid = topic_id_bytes(c.json(f"/brokers/topics/{topic}")["topic_id"])
    leader = state(c, topic, 0)["leader"]
    for _ in range(100):
        group = f"sg-{uuid.uuid4().hex[:8]}"
        k = partition_for(group, tid, 0, 3)
        if state(c, "__share_group_state", k)["leader"] not in (-1, leader):
            return group
    raise AssertionError("no group id found coordinated away from the leader")


@pytest.mark.parametrize("move", ["kill-9", "controlled-shutdown"])
def test_share_state_follows_the_leader(zookeeper_server, tmp_path, move):
    c = new_cluster(zookeeper_server, tmp_path, **SETTINGS)
    from confluent_kafka import AcknowledgeType
    try:
        create_topic(c, "jobs", 1, 3, min_insync_replicas=2)
        create_topic(c, "warm", 1, 3)
        start_state_topic(c)
        group = group_coordinated_elsewhere(c, "jobs")
        cons = share_consumer(c, group)
        cons.subscribe(["jobs"])
        prod = producer(c.bootstrap)
        deliveries: dict[bytes, list[int]] = {}     # value -> delivery counts seen
        confirmed: set[bytes] = set()               # ACCEPTs commit_sync confirmed

        def poll(accept=True):
            got = []
            for m in cons.poll(0.5):
                if m.error():
                    continue
                deliveries.setdefault(m.value(), []).append(m.delivery_count())
                got.append(m)
                if accept:
                    cons.acknowledge(m, AcknowledgeType.ACCEPT)
            if accept and got:
                result = cons.commit_sync(30)
                if all(e is None for e in (result or {}).values()):
                    confirmed.update(m.value() for m in got)
            return got

        # warm-up: the share-partition starts at the log end when first fetched (latest),
        # so records are written until one arrives; the checked records are those after
        deadline = time.monotonic() + WAIT_S
        warm = 0
        while not deliveries and time.monotonic() < deadline:
            produce(prod, "jobs", [b"w%d" % warm])
            warm += 1
            poll()
        assert deliveries, "the share consumer never received a record"
        # phase 1: records acknowledged one poll at a time
        before = [b"a%d" % i for i in range(60)]
        produce(prod, "jobs", before)
        deadline = time.monotonic() + WAIT_S
        while not set(before) <= confirmed and time.monotonic() < deadline:
            poll()
        assert set(before) <= confirmed
        # records acquired and left unacknowledged when the leader dies
        held = [b"h%d" % i for i in range(20)]
        produce(prod, "jobs", held)
        deadline = time.monotonic() + WAIT_S
        in_flight = []
        while not in_flight and time.monotonic() < deadline:
            in_flight = poll(accept=False)
        assert in_flight
        confirmed_at_kill = set(confirmed)
        seen_at_kill = {v: len(d) for v, d in deliveries.items()}
        leader = state(c, "jobs", 0)["leader"]
        if move == "kill-9":
            c.by_id(leader).kill()
        else:
            c.by_id(leader).stop()          # controlled shutdown: leadership moved first
        c.wait_for(lambda: state(c, "jobs", 0)["leader"] not in (-1, leader), WAIT_S,
                   what="a new leader of jobs-0")
        # phase 2: the rest, through the new leader (in-flight records come back there)
        cons.close()                      # its session and held records died with the leader
        cons = share_consumer(c, group)
        cons.subscribe(["jobs"])
        after = [b"b%d" % i for i in range(40)]
        produce(prod, "jobs", after)
        want = set(before) | set(held) | set(after)
        deadline = time.monotonic() + WAIT_S
        while not want <= confirmed and time.monotonic() < deadline:
            poll()
        # the checks
        missing = sorted(want - set(deliveries))
        assert not missing, f"never delivered: {missing[:10]}"
        again = sorted(v for v in confirmed_at_kill
                       if len(deliveries[v]) > seen_at_kill.get(v, 0))
        assert not again, f"accepted before the kill, delivered again: {again[:10]}"
        not_again = sorted(m.value() for m in in_flight
                           if len(deliveries[m.value()]) <= seen_at_kill[m.value()])
        assert not not_again, f"held at the kill, never delivered again: {not_again[:10]}"
        assert set(after) <= confirmed
        print(f"killed broker {leader}; in flight at the kill: {len(in_flight)}, their "
              f"delivery counts after: {sorted({max(deliveries[m.value()]) for m in in_flight})}")
        cons.close()
    finally:
        c.stop()
