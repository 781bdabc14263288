"""Injected errors against real clients: each retries as it would against Kafka, and the
faulted request or partition was not applied, so every record is written exactly once."""
from __future__ import annotations

import asyncio
import itertools

import pytest

from gregor.testing import Broker

_names = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


@pytest.fixture
def topic(broker, request):
    broker.faults.clear()
    name = f"{request.node.name[:40]}-{next(_names)}".replace("[", "-").replace("]", "")
    broker.create_topic(name, partitions=2)
    yield name
    broker.faults.clear()


def read_all(broker, topic, partition, expect):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "readers",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, partition, 0)])
    got = []
    try:
        for _ in range(200):
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error():
                if len(got) >= expect:
                    break
                continue
            got.append((m.offset(), m.value()))
    finally:
        c.close()
    return got


def test_confluent_kafka_retries_not_leader_and_writes_once(broker, topic):
    from confluent_kafka import Producer
    fault = broker.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 2, topic=topic,
                               partition=0)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    reports = []
    for partition, value in ((0, b"p0"), (1, b"p1")):
        p.produce(topic, value, partition=partition,
                  on_delivery=lambda err, m: reports.append((err, m.partition(), m.offset())))
    assert p.flush(20) == 0
    assert sorted(reports) == [(None, 0, 0), (None, 1, 0)]
    assert fault.fired == 2 and fault.done
    assert read_all(broker, topic, 0, 1) == [(0, b"p0")]
    assert read_all(broker, topic, 1, 1) == [(0, b"p1")]
    # three requests carried partition 0: two answered with the error, the third wrote it
    carried = [r for r in broker.requests("Produce")
               if any(t["name"] == topic and any(p["index"] == 0 for p in t["partition_data"])
                      for t in r["topic_data"])]
    assert len(carried) == 3


def test_kafka_python_idempotent_producer_retries_and_writes_once(broker, topic):
    from kafka import KafkaProducer
    fault = broker.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"],
                               topic=topic, partition=1)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True,
                      retry_backoff_ms=20)
    meta = p.send(topic, b"once", partition=1).get(20)
    p.close()
    assert (meta.partition, meta.offset) == (1, 0)
    assert fault.fired == 2
    assert read_all(broker, topic, 1, 1) == [(0, b"once")]


def test_aiokafka_retries_and_writes_once(broker, topic):
    from aiokafka import AIOKafkaProducer
    fault = broker.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic=topic)

    async def produce():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, retry_backoff_ms=20)
        await p.start()
        try:
            return await p.send_and_wait(topic, b"from aiokafka", partition=0)
        finally:
            await p.stop()
    meta = asyncio.run(produce())
    assert (meta.partition, meta.offset) == (0, 0)
    assert fault.fired == 1
    assert read_all(broker, topic, 0, 1) == [(0, b"from aiokafka")]


def test_fetch_and_metadata_errors_are_retried_by_the_consumer(broker, topic):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce(topic, b"a", partition=0)
    p.produce(topic, b"b", partition=0)
    assert p.flush(10) == 0
    fetch = broker.faults.push("Fetch", ["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_LEADER_EPOCH"],
                               topic=topic, partition=0)
    meta = broker.faults.push("Metadata", ["LEADER_NOT_AVAILABLE"], topic=topic)
    assert read_all(broker, topic, 0, 2) == [(0, b"a"), (1, b"b")]
    assert fetch.fired == 2 and meta.fired == 1


def test_a_faulted_offset_commit_is_not_applied(broker, topic):
    from gregor.testing.wire import WireClient
    broker.faults.push("OffsetCommit", ["COORDINATOR_LOAD_IN_PROGRESS"], topic=topic,
                       partition=0)
    with WireClient(broker.port) as c:
        c.request("FindCoordinator", 1, {"key": "committers", "key_type": 0})
        resp = c.request("OffsetCommit", 2, {
            "group_id": "committers", "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""},
                {"partition_index": 1, "committed_offset": 7, "committed_metadata": ""}]}]})
        codes = {p["partition_index"]: p["error_code"] for p in resp["topics"][0]["partitions"]}
        assert codes == {0: 14, 1: 0}
        fetched = c.request("OffsetFetch", 1, {"group_id": "committers", "topics": [
            {"name": topic, "partition_indexes": [0, 1]}]})
        offsets = {p["partition_index"]: p["committed_offset"]
                   for p in fetched["topics"][0]["partitions"]}
        assert offsets == {0: -1, 1: 7}


def test_the_request_log_shows_what_the_consumer_committed(broker, topic):
    from confluent_kafka import Consumer, TopicPartition
    broker.clear_requests()
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "log-readers",
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 1, 42)], asynchronous=False)
    finally:
        c.close()
    commits = broker.requests("OffsetCommit")
    assert [(t["name"], p["partition_index"], p["committed_offset"])
            for r in commits for t in r["topics"] for p in t["partitions"]] == [(topic, 1, 42)]
    assert commits[0].client_id == "rdkafka" and commits[0]["group_id"] == "log-readers"


def test_a_closed_connection_makes_the_producer_retry_and_write_once(broker, topic):
    from confluent_kafka import Producer
    fault = broker.faults.close("Produce")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "retry.backoff.ms": 20})
    p.produce(topic, b"after reconnect", partition=0)
    assert p.flush(20) == 0
    assert fault.fired == 1
    assert read_all(broker, topic, 0, 1) == [(0, b"after reconnect")]


def test_coordinator_errors_on_whole_requests_are_retried_by_a_group_consumer(broker, topic):
    from confluent_kafka import Consumer, Producer
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce(topic, b"for the group", partition=0)
    assert p.flush(10) == 0
    find = broker.faults.push("FindCoordinator", ["COORDINATOR_NOT_AVAILABLE"])
    join = broker.faults.push("JoinGroup", ["COORDINATOR_LOAD_IN_PROGRESS"])
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{topic}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        got = None
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and not m.error():
                got = m.value()
                break
    finally:
        c.close()
    assert got == b"for the group"
    assert find.fired == 1 and join.fired == 1
