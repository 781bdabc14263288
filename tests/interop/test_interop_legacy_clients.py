"""Clients that never ask ApiVersions: they pin an old protocol (Produce v0-v2 with magic 0/1
message sets, Fetch v0-v3, Metadata v0-v1, ListOffsets v0). The broker stores their records
up-converted and serves magic-2 data down-converted to them.

kafka-python pins a version with api_version=(0, 9) etc.; librdkafka with
api.version.request=false and broker.version.fallback. Magic 0 (before 0.10) has no timestamps.
"""
from __future__ import annotations

import time

import pytest

pytest.importorskip("kafka", reason="kafka-python is a test dependency")
pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition as CkTopicPartition  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.interop

N = 1_000
LEGACY_CODECS = ["none", "gzip", "snappy", "lz4"]  # zstd needs magic 2
KAFKA_PYTHON_VERSIONS = [(0, 8, 2), (0, 9), (0, 10, 0), (0, 10, 2)]
BASE_TS = 1_700_000_000_000
TIMEOUT_S = 60.0


def has_timestamps(version: tuple) -> bool:
    return version >= (0, 10)  # magic 1 and later carry a timestamp per message


def records(tag: str) -> list[tuple[bytes, bytes, int]]:
    return [(b"%s-key-%05d" % (tag.encode(), i), b"value-%d-" % i + b"x" * (i % 50), BASE_TS + i)
            for i in range(N)]


def kp_produce(bootstrap, topic, recs, codec, version) -> list[int]:
    p = KafkaProducer(bootstrap_servers=bootstrap, api_version=version,
                      compression_type=None if codec == "none" else codec)
    try:
        fs = [p.send(topic, key=k, value=v, partition=0, timestamp_ms=ts) for k, v, ts in recs]
        p.flush(TIMEOUT_S)
        return [f.get(TIMEOUT_S).offset for f in fs]
    finally:
        p.close(timeout=10)


def kp_consume(bootstrap, topic, count, version):
    c = KafkaConsumer(bootstrap_servers=bootstrap, api_version=version, group_id=None,
                      enable_auto_commit=False)
    try:
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < count and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out += [(m.offset, m.key, m.value, m.timestamp) for m in recs]
        return out
    finally:
        c.close()


def ck_consume(bootstrap, topic, count, extra=None):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "legacy-check",
                  "enable.auto.commit": False, **(extra or {})})
    try:
        c.assign([CkTopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert not m.error(), m.error()
                out.append((m.offset(), m.key(), m.value(), m.timestamp()[1], m.headers()))
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("version", KAFKA_PYTHON_VERSIONS, ids=lambda v: "v" + ".".join(map(str, v)))
def test_kafka_python_pinned_old_protocol_roundtrip(target, topic_name, version, codec):
    recs = records(topic_name)
    offsets = kp_produce(target.bootstrap, topic_name, recs, codec, version)
    assert offsets == list(range(N)), "old-protocol produce must get offsets 0..N-1 back"
    got = kp_consume(target.bootstrap, topic_name, N, version)
    want_ts = (lambda ts: ts) if has_timestamps(version) else (lambda ts: None)
    expected = [(i, k, v, want_ts(ts)) for i, (k, v, ts) in enumerate(recs)]
    got = [(o, k, v, ts if has_timestamps(version) else None) for o, k, v, ts in got]
    assert got == expected
    # and a modern client reads the up-converted records: same offsets, keys, values
    modern = ck_consume(target.bootstrap, topic_name, N)
    assert [(o, k, v) for o, k, v, _, _ in modern] == [(o, k, v) for o, k, v, _ in expected]
    if has_timestamps(version):
        assert [ts for _, _, _, ts, _ in modern] == [ts for _, _, ts in recs]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("version", [(0, 9), (0, 10, 0)], ids=["v0.9", "v0.10.0"])
def test_old_consumer_reads_modern_records_down_converted(target, topic_name, version, codec):
    """Records produced as magic-2 batches (with headers) by a modern client come back to a
    Fetch v0-v3 reader as magic 0/1 messages: same offsets, keys, values (and timestamps for
    magic 1); headers cannot be carried."""
    recs = records(topic_name)
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 20,
                  "compression.type": codec})
    for k, v, ts in recs:
        p.produce(topic_name, key=k, value=v, partition=0, timestamp=ts, headers=[("h", b"x")])
    assert p.flush(TIMEOUT_S) == 0
    got = kp_consume(target.bootstrap, topic_name, N, version)
    want = [(i, k, v, ts if has_timestamps(version) else None) for i, (k, v, ts) in enumerate(recs)]
    assert [(o, k, v, ts if has_timestamps(version) else None) for o, k, v, ts in got] == want


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("fallback", ["0.8.2", "0.9.0", "0.10.0"])
def test_librdkafka_without_api_versions_roundtrip(target, topic_name, fallback, codec):
    legacy = {"api.version.request": False, "broker.version.fallback": fallback}
    recs = records(topic_name)
    p = Producer({"bootstrap.servers": target.bootstrap, "compression.type": codec,
                  "linger.ms": 20, **legacy})
    reports = {}
    for i, (k, v, ts) in enumerate(recs):
        p.produce(topic_name, key=k, value=v, partition=0, timestamp=ts,
                  on_delivery=lambda err, msg, i=i: reports.__setitem__(i, (err, msg.offset())))
    assert p.flush(TIMEOUT_S) == 0
    assert [reports[i] for i in range(N)] == [(None, i) for i in range(N)]
    got = ck_consume(target.bootstrap, topic_name, N, legacy)
    ts_ok = tuple(map(int, fallback.split("."))) >= (0, 10)
    assert [(o, k, v) for o, k, v, _, _ in got] == [(i, k, v) for i, (k, v, _) in enumerate(recs)]
    if ts_ok:
        assert [ts for _, _, _, ts, _ in got] == [ts for _, _, ts in recs]
