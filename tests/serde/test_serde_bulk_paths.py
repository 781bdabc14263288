"""The bulk paths with Avro: send_batch of a typed Arrow table written as Confluent-framed
Avro, and poll_batches(arrow=True) decoding it into typed columns; confluent-kafka's
AvroDeserializer reads what send_batch wrote."""
import json
import time

import pyarrow as pa
import pytest

from gregor.client.consumer import Consumer
from gregor.client.errors import ClientError
from gregor.client.producer import Producer
from gregor.serde import AvroDeserializer, AvroSerializer

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkDeserializer  # noqa
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

TRIP = json.dumps({"type": "record", "name": "Trip", "fields": [
    {"name": "id", "type": "long"}, {"name": "city", "type": "string"},
    {"name": "km", "type": ["null", "double"], "default": None}]})
TIMEOUT_S = 60.0


def read_all(bootstrap, topic, n, **config):
    c = Consumer({"bootstrap.servers": bootstrap, **config})
    c.assign([(topic, 0, -2)])
    chunks, got, deadline = [], 0, time.monotonic() + TIMEOUT_S
    try:
        while got < n and time.monotonic() < deadline:
            for ch in c.poll_batches(1.0, arrow=True):
                chunks.append(ch)
                got += len(ch)
    finally:
        c.close()
    return chunks


def test_typed_table_round_trip(unique_topic, gregor_broker_session):
    registry = ck_sr.SchemaRegistryClient.new_client({"url": "mock://bulk"})
    n = 5000
    value = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array([f"c{i % 7}" for i in range(n)]),
         pa.array([None if i % 3 == 0 else i / 2 for i in range(n)])], ["id", "city", "km"])
    bootstrap = gregor_broker_session.bootstrap_servers
    p = Producer({"bootstrap.servers": bootstrap,
                  "value.serializer": AvroSerializer(registry, TRIP)})
    try:
        p.send_batch(unique_topic, pa.table({"value": value})).result(TIMEOUT_S)
    finally:
        p.close()
    chunks = read_all(bootstrap, unique_topic, n,
                      **{"value.deserializer": AvroDeserializer(registry)})
    got = pa.concat_arrays([c.values for c in chunks])
    assert got.type == pa.struct([pa.field("id", pa.int64(), False),
                                  pa.field("city", pa.string(), False),
                                  pa.field("km", pa.float64())])
    assert got.to_pylist() == value.to_pylist()
    # what confluent-kafka reads from the same bytes
    raw = read_all(bootstrap, unique_topic, n)
    de = CkDeserializer(registry)
    ctx = SerializationContext(unique_topic, MessageField.VALUE)
    first = raw[0].values.slice(0, 3).to_pylist()
    assert [de(v, ctx) for v in first] == value.slice(0, 3).to_pylist()


def test_bad_record_names_topic_partition_and_offset(unique_topic, gregor_broker_session):
    registry = ck_sr.SchemaRegistryClient.new_client({"url": "mock://bulk-bad"})
    bootstrap = gregor_broker_session.bootstrap_servers
    ser = AvroSerializer(registry, TRIP)
    p = Producer({"bootstrap.servers": bootstrap})
    try:
        for v in [ser.serialize(unique_topic, {"id": 1, "city": "a", "km": None}), b"raw",
                  ser.serialize(unique_topic, {"id": 2, "city": "b", "km": 1.0})]:
            p.send(unique_topic, v)
        p.flush(TIMEOUT_S)
    finally:
        p.close()
    with pytest.raises(ClientError, match=rf"{unique_topic}-0 offset 1: no magic byte"):
        read_all(bootstrap, unique_topic, 3, **{"value.deserializer": AvroDeserializer(registry)})
