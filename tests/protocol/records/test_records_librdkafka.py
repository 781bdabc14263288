"""librdkafka (confluent-kafka) as a second independent judge of our record bytes.

Both directions go through a gregor broker, which stores batches exactly as received:
- we send batches from our encoder in a raw Produce request; librdkafka consumes them;
- librdkafka produces with each codec; we decode the broker's segment files directly, so our
  decoder sees librdkafka's bytes (its raw snappy, its lz4 frames, its zstd frames).
"""
from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest

from gregor.protocol import messages
from gregor.protocol.header import decode_response, encode_request
from gregor.protocol.records.batch import decode_batches
from gregor.protocol.records.builder import BatchBuilder

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.interop

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _records(codec: str, n: int = 40):
    return [(1_700_000_000_000 + i, b"key-%d" % i if i % 3 else None,
             (b"%s value %d " % (codec.encode(), i)) * (1 + i % 4),
             [("idx", b"%d" % i)] if i % 5 == 0 else None) for i in range(n)]


def _roundtrip(bootstrap: str, frame: bytes) -> bytes:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(frame)
        size = struct.unpack(">i", _recv(s, 4))[0]
        return _recv(s, size)


def _recv(s, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1,
                                           replication_factor=1)])[topic].result(30)


def _consume(bootstrap: str, topic: str, n: int) -> list:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "records-judge",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([ck.TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m)
        return got
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_consumes_our_batches(gregor_broker_session, codec):
    broker = gregor_broker_session
    topic = f"ours-{codec}"
    _create_topic(broker.bootstrap, topic)
    recs = _records(codec)
    b = BatchBuilder(compression=codec, max_bytes=1 << 20)
    for r in recs:
        assert b.append(*r)
    batch = b.build()
    api = messages.api("Produce")
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    _, resp = decode_response(api, 7, _roundtrip(broker.bootstrap,
                                                 encode_request(api, 7, 1, "records-test", body)))
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
    got = _consume(broker.bootstrap, topic, len(recs))
    assert [(m.offset(), m.timestamp()[1], m.key(), m.value(), m.headers() or [])
            for m in got] == \
        [(i, ts, k, v, [tuple(x) for x in (h or [])]) for i, (ts, k, v, h) in enumerate(recs)]


@pytest.mark.parametrize("codec", CODECS)
def test_we_decode_librdkafka_batches(gregor_broker_session, codec):
    broker = gregor_broker_session
    topic = f"theirs-{codec}"
    _create_topic(broker.bootstrap, topic)
    recs = _records(codec, 300)
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "compression.codec": codec,
                     "linger.ms": 50, "enable.idempotence": False})
    for ts, k, v, h in recs:
        p.produce(topic, value=v, key=k, timestamp=ts, headers=h, partition=0)
    assert p.flush(30) == 0
    segments = sorted(Path(broker.data_dir).rglob(f"{topic}-0/*.log"))
    assert segments, "the broker keeps partition data in <data dir>/<topic>-<partition>/*.log"
    batches = [bt for seg in segments for bt in decode_batches(seg.read_bytes())]
    got = [r for bt in batches for r in bt]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == \
        [(i, ts, k, v, list(h or [])) for i, (ts, k, v, h) in enumerate(recs)]
    if codec != "none" and not any(bt.compression != 0 for bt in batches):
        # librdkafka decides per broker whether a codec is usable, from its ApiVersions
        pytest.xfail(f"librdkafka sent {codec} batches uncompressed to this broker (its debug "
                     f"log: 'Broker does not support compression type {codec}')")
