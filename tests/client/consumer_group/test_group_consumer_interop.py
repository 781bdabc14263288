"""Groups mixing gregor's consumer with confluent-kafka's (librdkafka; range and
cooperative-sticky), kafka-python's (range, roundrobin) or aiokafka's (roundrobin, picked by
vote from gregor's default list) on a gregor broker: each reads the
other's subscription and assignment bytes, whichever leads; assignments are disjoint and
complete, and every record is consumed once while the group is stable."""
from __future__ import annotations

import time

import pytest

from gregor.client.admin import AdminClient
from tests.client.consumer_group.test_group_consumer_broker import (PARTITIONS, SESSION_MS,
                                                                     broker, consumer,  # noqa
                                                                     new_topic)

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.interop


def confluent(broker, group, strategy="range", **extra):
    return confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": group,
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "partition.assignment.strategy": strategy, "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 300, **extra})


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("first", ["gregor", "confluent"])
def test_mixed_group_splits_and_consumes_once(broker, first, strategy):
    n = 400
    topic = new_topic(broker, n)
    group = f"mixed-{first}-{strategy}-{topic}"
    g = consumer(broker, group, **{"partition.assignment.strategy": strategy})
    c = confluent(broker, group, strategy)
    seen: dict = {}

    def poll_both():
        for r in g.poll(0.05):
            seen.setdefault((r.partition, r.offset), []).append("gregor")
        m = c.poll(0.05)
        if m is not None and not m.error():
            seen.setdefault((m.partition(), m.offset()), []).append("confluent")

    if first == "gregor":
        g.subscribe([topic])
        while not g.assignment():
            g.poll(0.05)
        c.subscribe([topic])
    else:
        c.subscribe([topic])
        while not c.assignment():
            c.poll(0.05)
        g.subscribe([topic])
    deadline = time.monotonic() + 60
    # Count only once both hold their share: before that, the first member may read records
    # it gives back in the rebalance (at-least-once, as Kafka's).
    while time.monotonic() < deadline:
        poll_both()
        pg = set(g.assignment())
        pc = {(tp.topic, tp.partition) for tp in c.assignment()}
        if pg and pc and len(pg) + len(pc) == PARTITIONS:
            break
    assert not pg & pc and pg | pc == {(topic, p) for p in range(PARTITIONS)}
    assert len(pg) == len(pc) == PARTITIONS // 2
    desc = AdminClient({"bootstrap.servers": broker.bootstrap}).describe_groups([group])[group]
    assert desc.protocol == strategy and desc.state == "Stable"
    # From here on: everything, exactly once (restart from the beginning of each partition).
    seen.clear()
    for t, p in pg:
        g.seek(t, p, 0)
    if strategy == "range":
        c.assign([confluent_kafka.TopicPartition(topic, p, 0) for _, p in sorted(pc)])
    else:
        for _, p in sorted(pc):
            c.seek(confluent_kafka.TopicPartition(topic, p, 0))
    while sum(len(v) for v in seen.values()) < n and time.monotonic() < deadline:
        poll_both()
    assert len(seen) == n and all(len(v) == 1 for v in seen.values())
    owners = {p: seen[(p, o)][0] for (p, o) in seen}
    assert {p for p, who in owners.items() if who == "gregor"} == {p for _, p in pg}
    g.close()
    c.close()


@pytest.mark.parametrize("strategy", ["roundrobin", "range"])
def test_gregor_and_kafka_python_share_one_group(broker, strategy):
    kafka = pytest.importorskip("kafka")
    n = 200
    topic = new_topic(broker, n)
    group = f"kp-{strategy}-{topic}"
    assignor = {"range": kafka.coordinator.assignors.range.RangePartitionAssignor,
                "roundrobin": kafka.coordinator.assignors.roundrobin
                .RoundRobinPartitionAssignor}[strategy]
    g = consumer(broker, group, **{"partition.assignment.strategy": strategy})
    g.subscribe([topic])
    while not g.assignment():
        g.poll(0.05)
    kp = kafka.KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
                             partition_assignment_strategy=[assignor])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            kp.poll(50)
            g.poll(0.05)
            pg = {p for _, p in g.assignment()}
            pk = {tp.partition for tp in kp.assignment()}
            if pg and pk and len(pg) + len(pk) == PARTITIONS:
                break
        assert not pg & pk and pg | pk == set(range(PARTITIONS))
        kp.seek_to_beginning()
        for p in pg:
            g.seek(topic, p, 0)
        seen: dict = {}
        while len(seen) < n and time.monotonic() < deadline:
            for recs in kp.poll(50).values():
                for r in recs:
                    seen.setdefault((r.partition, r.offset), []).append("kafka-python")
            for r in g.poll(0.05):
                seen.setdefault((r.partition, r.offset), []).append("gregor")
        assert len(seen) == n and all(len(v) == 1 for v in seen.values())
    finally:
        kp.close()
        g.close()


def test_gregor_with_default_strategies_and_aiokafka_agree_on_roundrobin(broker):
    """aiokafka offers only roundrobin; gregor's default (range,roundrobin) finds it."""
    aiokafka = pytest.importorskip("aiokafka")
    import asyncio
    import threading
    topic = new_topic(broker, 0)
    group = f"aio-{topic}"
    g = consumer(broker, group)
    g.subscribe([topic])
    while not g.assignment():
        g.poll(0.05)
    stop = threading.Event()
    held: list = []

    async def run_aiokafka():
        c = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                      session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
                                      enable_auto_commit=False)
        await c.start()
        try:
            while not stop.is_set():
                await c.getmany(timeout_ms=50)
                held[:] = [tp.partition for tp in c.assignment()]
        finally:
            await c.stop()
    t = threading.Thread(target=lambda: asyncio.run(run_aiokafka()))
    t.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            g.poll(0.05)
            mine = {p for _, p in g.assignment()}
            if mine and held and len(mine) + len(held) == PARTITIONS:
                break
        assert not mine & set(held) and mine | set(held) == set(range(PARTITIONS))
        desc = AdminClient({"bootstrap.servers": broker.bootstrap}).describe_groups([group])
        assert desc[group].protocol == "roundrobin"
    finally:
        stop.set()
        t.join(30)
        g.close()
