"""Admin APIs through real admin clients: CreateTopics (validate_only, errors), DescribeConfigs,
CreatePartitions, DeleteRecords, DeleteTopics; and topic configs that change produce/fetch:
message.timestamp.type=LogAppendTime and max.message.bytes."""
from __future__ import annotations

import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import (TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError,  # noqa: E402
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic  # noqa: E402

from tests.interop.dataset import Delivered, Got, make_records, verify_exact  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def admin(target):
    return AdminClient({"bootstrap.servers": target.bootstrap})


def error_code(fut) -> int:
    try:
        fut.result(timeout=TIMEOUT_S)
        return 0
    except KafkaException as e:
        return e.args[0].code()


def topics(admin) -> dict:
    return admin.list_topics(timeout=TIMEOUT_S).topics


def produce(bootstrap, topic, n, partition=0, **cfg):
    p = Producer({"bootstrap.servers": bootstrap, **cfg})
    reports = []
    recs = make_records(n, tag=topic)
    for r in recs:
        p.produce(topic, key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp,
                  partition=partition,
                  on_delivery=lambda err, msg, r=r: reports.append((r, err, msg)))
    assert p.flush(TIMEOUT_S) == 0
    return recs, reports


def consume(bootstrap, topic, partition, count, start=0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "admin-interop",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, partition, start)])
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert not m.error(), m.error()
                out.append(m)
        return out
    finally:
        c.close()


def test_create_topics_validate_only_and_errors(admin, topic_name):
    fs = admin.create_topics([NewTopic(topic_name, 3, 1)], validate_only=True)
    assert error_code(fs[topic_name]) == 0
    assert topic_name not in topics(admin), "validate_only created the topic"

    assert error_code(admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name]) == 0
    assert len(topics(admin)[topic_name].partitions) == 3
    assert error_code(admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name]) == \
        KafkaError.TOPIC_ALREADY_EXISTS
    bad_rf = topic_name + "-rf"
    assert error_code(admin.create_topics([NewTopic(bad_rf, 1, 3)])[bad_rf]) == \
        KafkaError.INVALID_REPLICATION_FACTOR, "replication factor 3 on one broker"
    bad_p = topic_name + "-p"
    assert error_code(admin.create_topics([NewTopic(bad_p, 0, 1)])[bad_p]) in (
        KafkaError.INVALID_PARTITIONS, KafkaError.INVALID_REQUEST)
    bad_cfg = topic_name + "-cfg"
    code = error_code(admin.create_topics(
        [NewTopic(bad_cfg, 1, 1, config={"retention.ms": "not-a-number"})])[bad_cfg])
    assert code == KafkaError.INVALID_CONFIG, f"bad config value gave error {code}"
    assert not {bad_rf, bad_p, bad_cfg} & set(topics(admin)), "a failed create left a topic"


def test_describe_configs_reports_topic_overrides_and_defaults(admin, topic_name):
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"retention.ms": "123456"})])[
        topic_name].result(timeout=TIMEOUT_S)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    configs = admin.describe_configs([res])[res].result(timeout=TIMEOUT_S)
    assert configs["retention.ms"].value == "123456"
    assert configs["cleanup.policy"].value == "delete"
    assert configs["max.message.bytes"].value == "1048588"


def test_create_partitions_then_produce_to_new_partition(admin, target, topic_name):
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=TIMEOUT_S)
    admin.create_partitions([NewPartitions(topic_name, 4)])[topic_name].result(timeout=TIMEOUT_S)
    assert len(topics(admin)[topic_name].partitions) == 4
    code = error_code(admin.create_partitions([NewPartitions(topic_name, 2)])[topic_name])
    assert code == KafkaError.INVALID_PARTITIONS, f"shrinking partitions gave {code}"
    recs, reports = produce(target.bootstrap, topic_name, 50, partition=3)
    assert [(err, msg.partition(), msg.offset()) for _, err, msg in reports] == \
        [(None, 3, i) for i in range(50)]
    got = consume(target.bootstrap, topic_name, 3, 50)
    assert [(m.offset(), m.key(), m.value()) for m in got] == \
        [(i, r.key, r.value) for i, r in enumerate(recs)]


def test_delete_records_moves_the_log_start(admin, target, topic_name):
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=TIMEOUT_S)
    recs, _ = produce(target.bootstrap, topic_name, 100)
    fut = admin.delete_records([TopicPartition(topic_name, 0, 40)])
    (result,) = fut.values()
    deleted = result.result(timeout=TIMEOUT_S)
    assert deleted.low_watermark == 40
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "x"})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=TIMEOUT_S, cached=False)
    c.close()
    assert (lo, hi) == (40, 100)
    # a consumer asked for offset 0 is out of range and resets to the new earliest
    got = consume(target.bootstrap, topic_name, 0, 60, start=0)
    assert [(m.offset(), m.key()) for m in got] == [(40 + i, r.key) for i, r in enumerate(recs[40:])]


def test_delete_topics(admin, topic_name):
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(timeout=TIMEOUT_S)
    assert error_code(admin.delete_topics([topic_name])[topic_name]) == 0
    deadline = time.monotonic() + TIMEOUT_S
    while topic_name in topics(admin) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic_name not in topics(admin)
    assert error_code(admin.delete_topics([topic_name])[topic_name]) == \
        KafkaError.UNKNOWN_TOPIC_OR_PART


def test_log_append_time_topic(admin, target, topic_name):
    """With message.timestamp.type=LogAppendTime the broker stamps its clock on every batch
    and tells the producer (delivery report) and consumers (timestamp type) so."""
    admin.create_topics([NewTopic(topic_name, 1, 1, config={
        "message.timestamp.type": "LogAppendTime"})])[topic_name].result(timeout=TIMEOUT_S)
    t0 = int(time.time() * 1000)
    recs, reports = produce(target.bootstrap, topic_name, 500, **{"compression.type": "lz4"})
    t1 = int(time.time() * 1000)
    got = consume(target.bootstrap, topic_name, 0, 500)
    assert len(got) == 500
    for m in got:
        ts_type, ts = m.timestamp()
        assert ts_type == TIMESTAMP_LOG_APPEND_TIME, f"offset {m.offset()}: type {ts_type}"
        assert t0 - 1000 <= ts <= t1 + 1000, f"offset {m.offset()}: append time {ts} not now"
    for r, err, msg in reports:
        ts_type, ts = msg.timestamp()
        assert err is None and ts_type == TIMESTAMP_LOG_APPEND_TIME and t0 - 1000 <= ts <= t1 + 1000
    verify_exact([Delivered(r, msg.partition(), msg.offset()) for r, _, msg in reports],
                 [Got(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()),
                      m.timestamp()[1]) for m in got], log_append_time=True)


def test_record_over_max_message_bytes_is_rejected(admin, target, topic_name):
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"max.message.bytes": "10000"})])[
        topic_name].result(timeout=TIMEOUT_S)
    p = Producer({"bootstrap.servers": target.bootstrap})
    results = []
    # one batch each (the limit applies to the whole batch)
    p.produce(topic_name, value=b"x" * 20_000, on_delivery=lambda e, m: results.append(e))
    assert p.flush(TIMEOUT_S) == 0
    p.produce(topic_name, value=b"y" * 5_000, on_delivery=lambda e, m: results.append(e))
    assert p.flush(TIMEOUT_S) == 0
    assert results[0] is not None and results[0].code() == KafkaError.MSG_SIZE_TOO_LARGE, results
    assert results[1] is None, results
    got = consume(target.bootstrap, topic_name, 0, 1)
    assert [(m.offset(), m.value()) for m in got] == [(0, b"y" * 5_000)]


def test_consumer_with_tiny_fetch_limits_still_progresses(admin, target, topic_name):
    """fetch.max.bytes / max.partition.fetch.bytes smaller than one batch: the broker still
    returns one whole batch per fetch so the consumer makes progress."""
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=TIMEOUT_S)
    recs, reports = produce(target.bootstrap, topic_name, 3000, **{"linger.ms": 50})
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "tiny",
                  "enable.auto.commit": False, "fetch.max.bytes": 1024,
                  "message.max.bytes": 1000,  # librdkafka insists fetch.max.bytes >= this
                  "max.partition.fetch.bytes": 512, "fetch.wait.max.ms": 10})
    try:
        c.assign([TopicPartition(topic_name, 0, 0)])
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(recs) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert not m.error(), m.error()
                got.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert got == [(i, r.key, r.value) for i, r in enumerate(recs)]


def test_cluster_metadata_as_clients_see_it(admin, target, topic_name):
    """One broker (the one we talk to, at the address we used), a controller, a cluster id,
    and every partition led by that broker with it as the only replica and ISR."""
    admin.create_topics([NewTopic(topic_name, 3, 1)])[topic_name].result(timeout=TIMEOUT_S)
    md = admin.list_topics(timeout=TIMEOUT_S)
    assert len(md.brokers) == 1, md.brokers
    (broker,) = md.brokers.values()
    assert f"{broker.host}:{broker.port}" == target.bootstrap
    assert md.controller_id == broker.id
    assert md.cluster_id, "empty cluster id"
    t = md.topics[topic_name]
    assert sorted(t.partitions) == [0, 1, 2]
    for p in t.partitions.values():
        assert (p.leader, p.replicas, p.isrs, p.error) == (broker.id, [broker.id], [broker.id], None)


@pytest.mark.parametrize("reset,expected_first", [("earliest", 0), ("latest", None)])
def test_fetch_past_the_end_is_out_of_range_and_the_client_resets(target, admin, topic_name,
                                                                  reset, expected_first):
    """A fetch at an offset past the high watermark gets OFFSET_OUT_OF_RANGE; the client then
    applies auto.offset.reset (earliest: read from 0; latest: only new records)."""
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(timeout=TIMEOUT_S)
    recs, _ = produce(target.bootstrap, topic_name, 20)
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "reset",
                  "enable.auto.commit": False, "auto.offset.reset": reset})
    try:
        c.assign([TopicPartition(topic_name, 0, 1000)])
        got = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(got) < 20:
            got += [m.offset() for m in c.consume(100, 0.2) if not m.error()]
        if expected_first is None:
            assert got == [], f"auto.offset.reset=latest still read {got[:5]}"
            p = Producer({"bootstrap.servers": target.bootstrap})
            p.produce(topic_name, value=b"new", partition=0)
            assert p.flush(TIMEOUT_S) == 0
            deadline = time.monotonic() + TIMEOUT_S
            while not got and time.monotonic() < deadline:
                got += [m.offset() for m in c.consume(100, 0.2) if not m.error()]
            assert got == [20]
        else:
            assert got == list(range(20))
    finally:
        c.close()


def test_min_insync_replicas_above_the_isr_rejects_acks_all_only(target, admin, topic_name):
    """min.insync.replicas=2 on a one-broker topic: acks=all gets NOT_ENOUGH_REPLICAS and
    nothing is appended; acks=1 is unaffected."""
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"min.insync.replicas": "2"})])[
        topic_name].result(timeout=TIMEOUT_S)
    strict = KafkaProducer(bootstrap_servers=target.bootstrap, acks="all", retries=0,
                           enable_idempotence=False)
    try:
        with pytest.raises(NotEnoughReplicasError):
            strict.send(topic_name, b"must-not-land", partition=0).get(timeout=TIMEOUT_S)
    finally:
        strict.close(timeout=10)
    relaxed = KafkaProducer(bootstrap_servers=target.bootstrap, acks=1)
    try:
        md = relaxed.send(topic_name, b"lands", partition=0).get(timeout=TIMEOUT_S)
    finally:
        relaxed.close(timeout=10)
    assert md.offset == 0, "the rejected acks=all record was appended anyway"
    got = consume(target.bootstrap, topic_name, 0, 1)
    assert [(m.offset(), m.value()) for m in got] == [(0, b"lands")]


def test_consumer_metadata_does_not_auto_create_but_producer_metadata_does(target, admin,
                                                                          topic_name):
    """Metadata v4+ carries allow_auto_topic_creation: librdkafka consumers send false (their
    allow.auto.create.topics default), producers true. The broker must honour the flag."""
    ghost = topic_name + "-ghost"
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "ghost",
                  "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 200})
    try:
        c.assign([TopicPartition(ghost, 0, 0)])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            c.consume(10, 0.2)
        assert ghost not in topics(admin), "a consumer's metadata request created the topic"
    finally:
        c.close()
    created = topic_name + "-auto"
    p = Producer({"bootstrap.servers": target.bootstrap})
    p.produce(created, value=b"first")
    assert p.flush(TIMEOUT_S) == 0
    assert created in topics(admin)
