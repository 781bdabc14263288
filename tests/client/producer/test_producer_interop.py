"""What gregor's producer writes, real clients read back exactly: confluent-kafka (librdkafka)
and kafka-python consume every codec, with keys, headers (repeated names, empty and binary
values) and explicit CreateTime timestamps, at the offsets our futures reported."""
from __future__ import annotations

from collections import Counter

import pytest

from gregor.client.producer import Producer
from tests.interop.dataset import CODECS, Delivered, make_records, verify_exact

pytestmark = pytest.mark.interop

ck_mod = pytest.importorskip("tests.interop.test_interop_confluent_kafka")
kp_mod = pytest.importorskip("tests.interop.test_interop_kafka_python")

# Enough records for several batches per partition under every codec, small enough to keep
# the module around a minute on a shared 2-core machine.
N = 1500
PARTITIONS = 3


def produce_with_gregor(bootstrap, topic, records, **conf):
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    try:
        futs = [p.send(topic, r.value, r.key, list(r.headers), timestamp_ms=r.timestamp)
                for r in records]
        p.flush(120)
        out = []
        for r, f in zip(records, futs):
            md = f.result(0)
            out.append(Delivered(r, md.partition, md.offset, md.timestamp))
        return out
    finally:
        p.close(30)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_and_kafka_python_read_back_exactly(client_broker, new_topic, codec):
    topic = new_topic(PARTITIONS)
    records = make_records(N, tag=f"gregor-{codec}")
    delivered = produce_with_gregor(client_broker.bootstrap, topic, records,
                                    **{"compression.type": codec, "linger.ms": 20})
    assert all(d.timestamp == d.rec.timestamp for d in delivered)
    assert len({d.partition for d in delivered}) == PARTITIONS   # keys spread by murmur2
    for reader in (ck_mod.ConfluentKafkaClient(), kp_mod.KafkaPythonClient()):
        got = reader.consume(client_broker.bootstrap, topic, PARTITIONS, N)
        verify_exact(delivered, got)


def test_keyed_records_land_where_librdkafka_murmur2_puts_them(client_broker, new_topic):
    # Java's default partitioner and librdkafka's "murmur2_random" agree for non-null keys.
    from confluent_kafka import Producer as CKProducer
    topic = new_topic(6)
    keys = [b"key-%d" % i for i in range(200)]
    ours = produce_with_gregor(client_broker.bootstrap, topic,
                               make_records(200, tag="placement"), acks=1)
    theirs = {}
    ck = CKProducer({"bootstrap.servers": client_broker.bootstrap,
                     "partitioner": "murmur2_random"})
    for k in keys:
        ck.produce(topic, b"v", k, on_delivery=lambda err, m: theirs.__setitem__(
            m.key(), m.partition()))
    assert ck.flush(60) == 0
    p = Producer({"bootstrap.servers": client_broker.bootstrap})
    try:
        mine = {k: p.send(topic, b"v", k).result(30).partition for k in keys}
    finally:
        p.close(10)
    assert mine == theirs
    assert len({d.partition for d in ours}) > 1


def test_send_batch_read_back_by_confluent(client_broker, new_topic):
    pa = pytest.importorskip("pyarrow")
    topic = new_topic(2)
    keys = [b"k%05d" % i for i in range(3000)]
    values = [b"value-%05d" % i for i in range(3000)]
    p = Producer({"bootstrap.servers": client_broker.bootstrap, "compression.type": "lz4"})
    try:
        r1 = p.send_batch(topic, values[:1000], keys=keys[:1000])
        table = pa.table({"key": pa.array(keys[1000:2000], pa.binary()),
                          "value": pa.array(values[1000:2000], pa.binary()),
                          "timestamp": pa.array(range(1000), pa.int64())})
        r2 = p.send_batch(topic, table)
        r3 = p.send_batch(topic, pa.array(values[2000:], pa.binary()), partition=1)
        metas = r1.result(60) + r2.result(60) + r3.result(60)
    finally:
        p.close(30)
    assert sum(m.record_count for m in metas) == 3000
    got = ck_mod.ConfluentKafkaClient().consume(client_broker.bootstrap, topic, 2, 3000)
    assert sorted(g.value for g in got) == sorted(values)
    by_value = {g.value: g for g in got}
    assert by_value[values[1005]].timestamp == 5          # the table's timestamp column
    assert by_value[values[1005]].key == keys[1005]
    assert all(by_value[v].partition == 1 and by_value[v].key is None for v in values[2000:])
    # Keyed records follow the partitioner, per key, as send() would place them.
    assert len({by_value[v].partition for v in values[:1000]}) == 2


def test_send_batch_of_arrow_columns_read_back_by_confluent(client_broker, new_topic):
    # Arrow columns go to the compiled encoder and the compiled murmur2 without per-record
    # Python objects: what confluent-kafka reads must be exactly what send() would write.
    pa = pytest.importorskip("pyarrow")
    from gregor.client.producer.partitioners import murmur2, to_positive
    n = 4000
    topic = new_topic(3)
    keys = [b"key-%d" % (i * 7919 % 1013) for i in range(n)]          # 5-8 bytes
    values = [None if i % 50 == 0 else "é-%d" % i for i in range(n)]
    key_col = pa.chunked_array([pa.array(keys[:1500], pa.binary()),
                                pa.array(keys[1500:], pa.binary())])
    table = pa.table({"key": key_col, "value": pa.array(values, pa.string())})
    p = Producer({"bootstrap.servers": client_broker.bootstrap, "batch.size": 16384})
    try:
        metas = p.send_batch(topic, table).result(60)
    finally:
        p.close(30)
    assert sum(m.record_count for m in metas) == n
    got = ck_mod.ConfluentKafkaClient().consume(client_broker.bootstrap, topic, 3, n)
    assert len(got) == n
    expected = {k: to_positive(murmur2(k)) % 3 for k in keys}
    assert all(g.partition == expected[g.key] for g in got)
    sent = Counter((k, v.encode() if v is not None else None) for k, v in zip(keys, values))
    assert Counter((g.key, g.value) for g in got) == sent
    # Within a partition, records keep the table's order.
    for part in range(3):
        offsets_in_order = [g.value for g in sorted(got, key=lambda g: g.offset)
                            if g.partition == part]
        want = [v.encode() if v is not None else None for k, v in zip(keys, values)
                if expected[k] == part]
        assert offsets_in_order == want


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_large_compressed_bulk_batches_read_back_by_real_clients(client_broker, new_topic,
                                                                 codec):
    """Compressed bulk batches hold up to 8 MiB of records (1 MiB on the wire): librdkafka
    and kafka-python read them all, in order, at the offsets send_batch reported."""
    pa = pytest.importorskip("pyarrow")
    topic = new_topic(1)
    n = 150_000                                     # ~15 MiB of records, ~10:1 compressible
    values = [b"%020d" % i + b"x" * 80 for i in range(n)]
    p = Producer({"bootstrap.servers": client_broker.bootstrap, "compression.type": codec})
    try:
        metas = p.send_batch(topic, pa.array(values, pa.binary())).result(120)
    finally:
        p.close(30)
    assert sum(m.record_count for m in metas) == n
    assert max(m.record_count for m in metas) * 100 > 2 << 20, "no batch beyond 2 MiB"
    assert [m.base_offset for m in metas] == sorted(m.base_offset for m in metas)
    for client in (ck_mod.ConfluentKafkaClient(), kp_mod.KafkaPythonClient()):
        got = client.consume(client_broker.bootstrap, topic, 1, n)
        assert [g.value for g in sorted(got, key=lambda g: g.offset)] == values, type(client)
        assert [g.offset for g in got] == sorted(g.offset for g in got)
