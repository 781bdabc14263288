"""poll_batches(arrow=True) returns exactly what poll() returns, on data real producers
(confluent-kafka / librdkafka, kafka-python) wrote with every codec: null keys and values,
empty values, headers (record-loop fallback) and headerless fetches (the numpy path)."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from gregor import Consumer
from gregor.client.consumer import arrow_records
from gregor.client.consumer.arrow_records import HEADERS_TYPE, ArrowRecords

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.interop

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def sample(n, headers: bool, null_header: bool = True):
    out = []
    for i in range(n):
        key = None if i % 4 == 0 else b"key-%d" % i
        value = None if i % 9 == 3 and key else (b"" if i % 9 == 5 else b"value-%d-" % i +
                                         bytes(range(i % 256)))
        hdrs = [("h1", b"a%d" % i), ("h2", b"")] + ([("h3", None)] if null_header else [])
        hdrs = hdrs if headers and i % 3 == 0 else []
        out.append((key, value, hdrs, T0 + i * 7))
    return out


def _conf(bootstrap):
    return {"bootstrap.servers": bootstrap, "fetch.max.wait.ms": 100}


def read_records(bootstrap, topic, partitions, expect):
    got = []
    with Consumer(_conf(bootstrap)) as c:
        c.assign([(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(got) < expect and time.monotonic() < deadline:
            got += c.poll(0.5)
    return sorted(got, key=lambda r: (r.partition, r.offset))


def read_arrow(bootstrap, topic, partitions, expect):
    chunks = []
    with Consumer(_conf(bootstrap)) as c:
        c.assign([(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while sum(map(len, chunks)) < expect and time.monotonic() < deadline:
            chunks += c.poll_batches(0.5, arrow=True)
    return chunks


def check_same(bootstrap, topic, partitions, n, monkeypatch, numpy_path: bool):
    want = read_records(bootstrap, topic, partitions, n)
    fast = []
    real = arrow_records._vectorised
    with monkeypatch.context() as m:  # count the fetches the numpy path decoded
        m.setattr(arrow_records, "_vectorised", lambda *a: fast.append(real(*a)) or fast[-1])
        chunks = read_arrow(bootstrap, topic, partitions, n)
    assert any(f is not None for f in fast) == numpy_path
    assert len(want) == n
    for ch in chunks:
        assert isinstance(ch, ArrowRecords)
        assert ch.keys.type == pa.binary() and ch.offsets.type == pa.int64()
        assert ch.headers.type == HEADERS_TYPE
    got = sorted((r for ch in chunks for r in ch.records()),
                 key=lambda r: (r.partition, r.offset))
    assert got == want
    # The record view above is built from these columns; check them directly too.
    for p in range(partitions):
        mine = [ch for ch in chunks if ch.partition == p]
        table = pa.Table.from_batches([ch.to_arrow() for ch in mine])
        expected = [r for r in want if r.partition == p]
        assert table.column("value").to_pylist() == [r.value for r in expected]
        assert table.column("key").to_pylist() == [r.key for r in expected]
        assert table.column("offset").to_pylist() == [r.offset for r in expected]
        assert table.column("timestamp").to_pylist() == [r.timestamp for r in expected]
    return want


@pytest.mark.parametrize("codec", CODECS)
def test_arrow_output_matches_records_from_confluent_kafka(codec, client_broker, new_topic,
                                                           monkeypatch):
    for headers in (True, False):
        topic = new_topic(2)
        data = sample(300, headers)
        p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                      "compression.type": codec, "linger.ms": 20})
        for i, (k, v, h, ts) in enumerate(data):
            p.produce(topic, value=v, key=k, headers=h or None, timestamp=ts, partition=i % 2)
        assert p.flush(30) == 0
        got = check_same(client_broker.bootstrap, topic, 2, len(data), monkeypatch,
                         numpy_path=not headers)
        assert [(r.key, r.value, r.headers, r.timestamp) for r in got if r.partition == 0] \
            == [(k, v, h, ts) for i, (k, v, h, ts) in enumerate(data) if i % 2 == 0]


@pytest.mark.parametrize("codec", CODECS)
def test_arrow_output_matches_records_from_kafka_python(codec, client_broker, new_topic,
                                                        monkeypatch):
    kafka = pytest.importorskip("kafka")
    if codec == "snappy":
        pytest.importorskip("snappy", reason="kafka-python needs python-snappy for snappy")
    for headers in (True, False):
        topic = new_topic(1)
        data = sample(200, headers, null_header=False)  # kafka-python refuses None values
        p = kafka.KafkaProducer(bootstrap_servers=client_broker.bootstrap,
                                compression_type=None if codec == "none" else codec,
                                linger_ms=10)
        futures = [p.send(topic, value=v, key=k, headers=h, timestamp_ms=ts, partition=0)
                   for k, v, h, ts in data]
        p.flush(30)
        for f in futures:
            f.get(30)
        p.close(10)
        got = check_same(client_broker.bootstrap, topic, 1, len(data), monkeypatch,
                         numpy_path=not headers)
        assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == data


def test_switching_between_arrow_and_records_mid_stream(client_broker, new_topic):
    topic = new_topic(1)
    data = sample(400, False)
    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                  "linger.ms": 5, "batch.num.messages": 50})
    for k, v, h, ts in data:
        p.produce(topic, value=v, key=k, timestamp=ts, partition=0)
    assert p.flush(30) == 0
    conf = {**_conf(client_broker.bootstrap), "max.partition.fetch.bytes": 4096}
    seen = []
    with Consumer(conf) as c:
        c.assign([(topic, 0, 0)])
        deadline = time.monotonic() + 30
        turn = 0
        while len(seen) < len(data) and time.monotonic() < deadline:
            turn += 1
            if turn % 3 == 0:
                seen += [(r.offset, r.key, r.value) for r in c.poll(0.5, max_records=37)]
            else:
                for ch in c.poll_batches(0.5, max_records=61, arrow=turn % 3 == 1):
                    seen += list(zip(ch.offsets if isinstance(ch.offsets, list)
                                     else ch.offsets.to_pylist(),
                                     list(ch.keys) if isinstance(ch.keys, list)
                                     else ch.keys.to_pylist(),
                                     list(ch.values) if isinstance(ch.values, list)
                                     else ch.values.to_pylist()))
        assert c.position(topic, 0) == len(data)
    assert seen == [(i, k, v) for i, (k, v, _, _) in enumerate(data)]
