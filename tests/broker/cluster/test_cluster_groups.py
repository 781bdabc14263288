"""Consumer groups on a cluster: `__consumer_offsets` replicated through ZooKeeper, each group
coordinated by the leader of its partition whichever broker a member asked, committed offsets
surviving kill -9 of the coordinator (real clients: confluent-kafka and kafka-python)."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.broker.cluster.test_replication import create_topic, new_cluster, state
from tests.support.cluster import BrokerCluster

pytestmark = pytest.mark.timeout(240)
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}


def coordinator_of(c: BrokerCluster, group: str) -> int:
    from gregor.broker.txn.coordinator import partition_for
    p = partition_for(group, 50)
    return state(c, "__consumer_offsets", p)["leader"]


def consumer(bootstrap: str, group: str, **extra):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "topic.metadata.refresh.interval.ms": 1000, **extra})


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, str(i).encode(), partition=i % partitions)
    assert p.flush(60) == 0


def test_members_asking_different_brokers_share_one_group_and_commits_survive_the_coordinator(
        zookeeper_server, tmp_path):
    c = new_cluster(zookeeper_server, tmp_path, **GROUP_SETTINGS)
    t0 = time.monotonic()
    try:
        create_topic(c, "orders", 4, 3, min_insync_replicas=2)
        produce(c.bootstrap, "orders", 400, 4)
        group = f"g-{uuid.uuid4().hex[:8]}"
        # each member bootstraps from a different broker
        a = consumer(c.brokers[0].bootstrap, group)
        b = consumer(c.brokers[1].bootstrap, group)
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        seen = set()

        def poll_both():
            for m in (a.poll(0.1), b.poll(0.1)):
                if m is not None and not m.error():
                    seen.add(m.value())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            poll_both()
            pa = {tp.partition for tp in a.assignment()}
            pb = {tp.partition for tp in b.assignment()}
            if pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}:
                break
        else:
            raise AssertionError(f"one group of two was not formed: {a.assignment()} "
                                 f"{b.assignment()}")
        print(f"group formed after {time.monotonic() - t0:.1f}s")
        coord = coordinator_of(c, group)
        assert sorted(state(c, "__consumer_offsets", 0)["isr"]) == [0, 1, 2]
        # commit what each read; then kill -9 the coordinator
        deadline = time.monotonic() + 60
        while len(seen) < 400 and time.monotonic() < deadline:
            poll_both()
        assert len(seen) == 400
        a.commit(asynchronous=False)
        b.commit(asynchronous=False)
        a.close()
        b.close()
        c.by_id(coord).kill()
        c.wait_for(lambda: coordinator_of(c, group) not in (coord, -1),
                   what="a new coordinator for the group")
        survivor = next(x for x in c.brokers if x.broker_id != coord)
        from confluent_kafka import TopicPartition
        check = consumer(survivor.bootstrap, group)
        committed = check.committed([TopicPartition("orders", p) for p in range(4)],
                                    timeout=30)
        check.close()
        assert sum(tp.offset for tp in committed) == 400, committed
    finally:
        c.stop()


def test_kafka_python_group_on_a_cluster(zookeeper_server, tmp_path):
    import kafka
    c = new_cluster(zookeeper_server, tmp_path, **GROUP_SETTINGS)
    try:
        create_topic(c, "kp", 2, 3)
        produce(c.bootstrap, "kp", 100, 2)
        kc = kafka.KafkaConsumer("kp", bootstrap_servers=c.brokers[2].bootstrap,
                                 group_id="kpg", auto_offset_reset="earliest",
                                 enable_auto_commit=False)
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 100 and time.monotonic() < deadline:
            for recs in kc.poll(200).values():
                got += [r.value for r in recs]
        kc.commit()
        kc.close()
        assert sorted(int(v) for v in got) == list(range(100))
        assert coordinator_of(c, "kpg") in (0, 1, 2)
    finally:
        c.stop()


def test_consumer_protocol_group_carries_on_after_its_coordinator_is_killed(
        zookeeper_server, tmp_path):
    """KIP-848 (group.protocol=consumer): the new coordinator reloads the group's records
    (members, epochs, assignments) and the members go on with their partitions."""
    from confluent_kafka import Consumer, TopicPartition
    c = new_cluster(zookeeper_server, tmp_path, **GROUP_SETTINGS,
                    **{"group.consumer.heartbeat.interval.ms": 500})
    try:
        create_topic(c, "events", 4, 3, min_insync_replicas=2)
        produce(c.bootstrap, "events", 400, 4)
        group = f"kip848-{uuid.uuid4().hex[:8]}"

        def member(bootstrap):
            m = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "group.protocol": "consumer", "auto.offset.reset": "earliest",
                          "enable.auto.commit": False,
                          "topic.metadata.refresh.interval.ms": 1000})
            m.subscribe(["events"])
            return m
        a, b = member(c.brokers[0].bootstrap), member(c.brokers[1].bootstrap)
        seen: dict = {}

        def poll_both():
            for who, m in (("a", a.poll(0.1)), ("b", b.poll(0.1))):
                if m is not None and not m.error():
                    seen.setdefault(m.value(), []).append(who)
        deadline = time.monotonic() + 90
        while len(seen) < 200 and time.monotonic() < deadline:
            poll_both()
        pa, pb = ({tp.partition for tp in x.assignment()} for x in (a, b))
        assert pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}, (pa, pb)
        a.commit(asynchronous=False)
        b.commit(asynchronous=False)
        coord = coordinator_of(c, group)
        c.by_id(coord).kill()
        c.wait_for(lambda: coordinator_of(c, group) not in (coord, -1),
                   what="a new coordinator for the group")
        deadline = time.monotonic() + 90
        while len(seen) < 400 and time.monotonic() < deadline:
            poll_both()
        assert len(seen) == 400
        assert all(len(v) == 1 for v in seen.values()), "a record was read twice"
        # still the same two members with the same partitions: nobody was fenced or joined
        # again (each broker's log names every join it coordinated)
        assert ({tp.partition for tp in a.assignment()},
                {tp.partition for tp in b.assignment()}) == (pa, pb)
        joins = [line for x in c.brokers for line in x.log_text().splitlines()
                 if f"group {group}: member" in line and "joins" in line]
        assert len(joins) == 2, joins
        a.commit(asynchronous=False)
        b.commit(asynchronous=False)
        committed = a.committed([TopicPartition("events", p) for p in range(4)], timeout=30)
        assert sum(tp.offset for tp in committed) == 400, committed
        a.close()
        b.close()
    finally:
        c.stop()
