"""What real Kafka producers (confluent-kafka / librdkafka, kafka-python) write, gregor's consumer
reads back exactly: every codec, keys, null values, headers, timestamps. Plus the consumer's
broker-facing behaviour: long poll, offsets for times, out-of-range resets, asyncio."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gregor import AsyncioConsumer, Consumer

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.interop

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def sample(n):
    """(key, value, headers, timestamp) with null keys, a null value, empty values, binary."""
    out = []
    for i in range(n):
        key = None if i % 4 == 0 else b"key-%d" % i
        value = None if i == 3 else (b"" if i == 5 else b"value-%d-" % i + bytes(range(i % 256)))
        headers = [("h1", b"a%d" % i), ("h2", b"")] if i % 3 == 0 else []
        out.append((key, value, headers, T0 + i * 7))
    return out


def read_all(bootstrap, topic, partitions, expect, timeout=30.0, **cfg):
    conf = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
            "fetch.max.wait.ms": 100}
    conf.update(cfg)
    got = []
    with Consumer(conf) as c:
        c.assign([(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while len(got) < expect and time.monotonic() < deadline:
            got += c.poll(0.5)
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_reads_what_confluent_kafka_wrote(codec, client_broker, new_topic):
    topic = new_topic(2)
    data = sample(60)
    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                  "compression.type": codec, "linger.ms": 20})
    for i, (k, v, h, ts) in enumerate(data):
        p.produce(topic, value=v, key=k, headers=h or None, timestamp=ts, partition=i % 2)
    assert p.flush(30) == 0
    got = read_all(client_broker.bootstrap, topic, 2, len(data))
    by_value = sorted(((r.partition, r.offset), (r.key, r.value, r.headers, r.timestamp))
                      for r in got)
    assert len(got) == len(data)
    expected = {p: [(k, v, h, ts) for i, (k, v, h, ts) in enumerate(data) if i % 2 == p]
                for p in (0, 1)}
    for part in (0, 1):
        mine = [rec for (pp, _), rec in by_value if pp == part]
        assert mine == expected[part]
        offsets = [o for (pp, o), _ in by_value if pp == part]
        assert offsets == list(range(len(expected[part])))
    assert {r.timestamp_type for r in got} == {0}


@pytest.mark.parametrize("codec", ["none", "gzip", "lz4", "zstd", "snappy"])
def test_reads_what_kafka_python_wrote(codec, client_broker, new_topic):
    kafka = pytest.importorskip("kafka")
    if codec == "snappy":
        pytest.importorskip("snappy", reason="kafka-python needs python-snappy for snappy")
    topic = new_topic(1)
    data = sample(40)
    p = kafka.KafkaProducer(bootstrap_servers=client_broker.bootstrap,
                            compression_type=None if codec == "none" else codec,
                            linger_ms=10)
    futures = [p.send(topic, value=v, key=k, headers=h, timestamp_ms=ts, partition=0)
               for k, v, h, ts in data]
    p.flush(30)
    for f in futures:
        f.get(30)
    p.close(10)
    got = read_all(client_broker.bootstrap, topic, 1, len(data))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == \
        [(k, v, h, ts) for k, v, h, ts in data]
    assert [r.offset for r in got] == list(range(len(data)))


def test_long_poll_returns_records_produced_while_waiting(client_broker, new_topic):
    topic = new_topic(1)
    conf = {"bootstrap.servers": client_broker.bootstrap, "fetch.max.wait.ms": 5000}
    with Consumer(conf) as c:
        c.assign([(topic, 0, 0)])
        assert c.poll(0.2) == []

        def later():
            time.sleep(0.3)
            p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap})
            p.produce(topic, value=b"late", partition=0)
            p.flush(10)

        th = threading.Thread(target=later)
        th.start()
        got = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got = c.poll(1.0)
        th.join()
        assert [r.value for r in got] == [b"late"]


def _produce(bootstrap, topic, values, partition=0, timestamps=None):
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, v in enumerate(values):
        kw = {"timestamp": timestamps[i]} if timestamps else {}
        p.produce(topic, value=v, partition=partition, **kw)
    assert p.flush(30) == 0


def test_offsets_for_times_and_end_offsets(client_broker, new_topic):
    topic = new_topic(1)
    _produce(client_broker.bootstrap, topic, [b"a", b"b", b"c", b"d"],
             timestamps=[T0, T0 + 10, T0 + 20, T0 + 30])
    with Consumer({"bootstrap.servers": client_broker.bootstrap}) as c:
        tp = (topic, 0)
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 4}
        found = c.offsets_for_times({tp: T0 + 15})[tp]
        assert (found.offset, found.timestamp) == (2, T0 + 20)
        assert c.offsets_for_times({tp: T0 + 999})[tp] is None
        c.assign([(topic, 0, found.offset)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            got += c.poll(0.5)
        assert [r.value for r in got] == [b"c", b"d"]


def test_out_of_range_offset_resets_to_earliest(client_broker, new_topic):
    topic = new_topic(1)
    _produce(client_broker.bootstrap, topic, [b"x", b"y"])
    got = []
    with Consumer({"bootstrap.servers": client_broker.bootstrap,
                   "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100}) as c:
        c.assign([(topic, 0, 1000)])
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            got += c.poll(0.5)
        assert [r.offset for r in got] == [0, 1]


def test_poll_batches_columns_match(client_broker, new_topic):
    topic = new_topic(1)
    _produce(client_broker.bootstrap, topic, [b"v%d" % i for i in range(300)])
    with Consumer({"bootstrap.servers": client_broker.bootstrap,
                   "fetch.max.wait.ms": 100}) as c:
        c.assign([(topic, 0, 0)])
        batches = []
        deadline = time.monotonic() + 20
        while sum(map(len, batches)) < 300 and time.monotonic() < deadline:
            batches += c.poll_batches(0.5)
        offsets = [o for b in batches for o in b.offsets]
        values = [v for b in batches for v in b.values]
        assert offsets == list(range(300)) and values == [b"v%d" % i for i in range(300)]
        table_rows = sum(b.to_arrow().num_rows for b in batches)
        assert table_rows == 300 and c.position(topic, 0) == 300


def test_asyncio_consumer(client_broker, new_topic):
    topic = new_topic(1)
    _produce(client_broker.bootstrap, topic, [b"one", b"two", b"three"])

    async def main():
        async with AsyncioConsumer({"bootstrap.servers": client_broker.bootstrap,
                                    "fetch.max.wait.ms": 100}) as c:
            await c.assign([(topic, 0, 0)])
            got = []
            for _ in range(40):
                got += await c.poll(0.5)
                if len(got) >= 3:
                    break
            ends = await c.end_offsets([(topic, 0)])
            return [r.value for r in got], ends, await c.position(topic, 0)

    values, ends, pos = asyncio.run(main())
    assert values == [b"one", b"two", b"three"]
    assert ends == {(topic, 0): 3} and pos == 3


@pytest.mark.parametrize("fetch_version,magic", [(1, 0), (3, 1)])
def test_old_fetch_versions_read_legacy_message_sets(fetch_version, magic, client_broker,
                                                     new_topic, monkeypatch):
    # Capping Fetch below v4 makes the broker answer with magic 0/1 message sets (converted
    # from the stored v2 batches), which the consumer must decode too.
    import gregor.client.consumer.consumer as consumer_module
    monkeypatch.setattr(consumer_module, "_MAX_FETCH_VERSION", fetch_version)
    topic = new_topic(1)
    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                  "compression.type": "gzip"})
    for i in range(6):
        p.produce(topic, value=b"v%d" % i, key=b"k%d" % i, partition=0, timestamp=T0 + i)
    assert p.flush(30) == 0
    got = read_all(client_broker.bootstrap, topic, 1, 6)
    assert [(r.offset, r.key, r.value) for r in got] == \
        [(i, b"k%d" % i, b"v%d" % i) for i in range(6)]
    if magic == 0:
        assert {(r.timestamp, r.timestamp_type) for r in got} == {(-1, -1)}
    else:
        assert [r.timestamp for r in got] == [T0 + i for i in range(6)]


def test_tiny_fetch_limits_still_make_progress(client_broker, new_topic):
    # Brokers return at least one whole batch even when it exceeds max.partition.fetch.bytes
    # and fetch.max.bytes (KIP-74), so a consumer with tiny limits still reads everything.
    topic = new_topic(2)
    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                  "linger.ms": 20})
    for i in range(40):
        p.produce(topic, value=b"%04d" % i + b"x" * 1000, partition=i % 2)
    assert p.flush(30) == 0
    got = read_all(client_broker.bootstrap, topic, 2, 40,
                   **{"max.partition.fetch.bytes": 64, "fetch.max.bytes": 128})
    assert sorted(int(r.value[:4]) for r in got) == list(range(40))
