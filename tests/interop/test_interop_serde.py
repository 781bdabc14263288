"""gregor.serde against confluent-kafka's serde through a gregor broker: records written by
gregor's Producer with gregor's serializers are read by confluent-kafka's Consumer with its
deserializers, and the other way round (Avro, JSON Schema, Protobuf), both on one registry."""
from __future__ import annotations

import json
import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[schemaregistry] is a test dependency")
from confluent_kafka import Consumer as CkConsumer, Producer as CkProducer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from gregor.client.consumer import Consumer  # noqa: E402
from gregor.client.producer import Producer  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0

USER = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]})
VALUES = [{"name": f"u{i}", "age": i, "tags": ["a"] * (i % 3)} for i in range(20)]


@pytest.fixture
def registry():
    return ck_sr.SchemaRegistryClient.new_client({"url": "mock://interop"})


def ck_consume(bootstrap, topic, n, deserializer, key_deserializer=None):
    c = CkConsumer({"bootstrap.servers": bootstrap, "group.id": f"serde-{topic}",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + TIMEOUT_S
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            value = deserializer(m.value(), SerializationContext(topic, MessageField.VALUE))
            key = (key_deserializer(m.key(), SerializationContext(topic, MessageField.KEY))
                   if key_deserializer else m.key())
            got.append((key, value))
    finally:
        c.close()
    return got


def gregor_consume(bootstrap, topic, n, **config):
    c = Consumer({"bootstrap.servers": bootstrap, **config})
    c.assign([(topic, 0, -2)])
    got, deadline = [], time.monotonic() + TIMEOUT_S
    try:
        while len(got) < n and time.monotonic() < deadline:
            got.extend((r.key, r.value) for r in c.poll(1.0))
    finally:
        c.close()
    return got


def ck_produce(bootstrap, topic, items, serializer, key_serializer=None):
    p = CkProducer({"bootstrap.servers": bootstrap})
    for key, value in items:
        k = key_serializer(key, SerializationContext(topic, MessageField.KEY)) \
            if key_serializer else key
        p.produce(topic, value=serializer(value, SerializationContext(topic, MessageField.VALUE)),
                  key=k)
    assert p.flush(TIMEOUT_S) == 0


def gregor_produce(bootstrap, topic, items, **config):
    p = Producer({"bootstrap.servers": bootstrap, **config})
    try:
        for key, value in items:
            p.send(topic, value=value, key=key)
        p.flush(TIMEOUT_S)
    finally:
        p.close()


def test_avro_gregor_producer_to_confluent_consumer(target, topic_name, registry):
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from gregor.serde import AvroSerializer
    ser = AvroSerializer(registry, USER)
    gregor_produce(target.bootstrap, topic_name, [(f"k{i}", v) for i, v in enumerate(VALUES)],
                   **{"value.serializer": ser, "key.serializer": AvroSerializer(registry,
                                                                                '"string"')})
    got = ck_consume(target.bootstrap, topic_name, len(VALUES), AvroDeserializer(registry),
                     AvroDeserializer(registry))
    assert got == [(f"k{i}", v) for i, v in enumerate(VALUES)]
    assert set(registry.get_subjects()) == {f"{topic_name}-value", f"{topic_name}-key"}


def test_avro_confluent_producer_to_gregor_consumer(target, topic_name, registry):
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from gregor.serde import AvroDeserializer
    ck_produce(target.bootstrap, topic_name, [(f"k{i}", v) for i, v in enumerate(VALUES)],
               AvroSerializer(registry, USER), AvroSerializer(registry, '"string"'))
    got = gregor_consume(target.bootstrap, topic_name, len(VALUES),
                         **{"value.deserializer": AvroDeserializer(registry),
                            "key.deserializer": AvroDeserializer(registry)})
    assert got == [(f"k{i}", v) for i, v in enumerate(VALUES)]


ORDER = json.dumps({"title": "Order", "type": "object",
                    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                    "required": ["id", "item"]})
ORDERS = [{"id": i, "item": f"item-{i}"} for i in range(10)]


def test_json_both_ways(target, topic_name, registry):
    from confluent_kafka.schema_registry import json_schema as ck_json
    from gregor.serde.json_schema import JSONDeserializer, JSONSerializer
    gregor_produce(target.bootstrap, topic_name, [(None, v) for v in ORDERS],
                   **{"value.serializer": JSONSerializer(ORDER, registry)})
    ck_produce(target.bootstrap, topic_name, [(None, v) for v in ORDERS],
               ck_json.JSONSerializer(ORDER, registry))
    theirs = ck_consume(target.bootstrap, topic_name, 20, ck_json.JSONDeserializer(ORDER))
    ours = gregor_consume(target.bootstrap, topic_name, 20, **{
        "value.deserializer": JSONDeserializer(schema_registry_client=registry)})
    assert [v for _, v in theirs] == [v for _, v in ours] == ORDERS * 2


def test_protobuf_both_ways(target, topic_name, registry):
    from confluent_kafka.schema_registry import protobuf as ck_proto
    from gregor.serde.protobuf import ProtobufDeserializer, ProtobufSerializer
    from tests.serde.proto_messages import Address, User
    users = [User(name=f"u{i}", age=i, home=Address(city="Oslo")) for i in range(10)]
    gregor_produce(target.bootstrap, topic_name, [(None, u) for u in users],
                   **{"value.serializer": ProtobufSerializer(User, registry)})
    ck_produce(target.bootstrap, topic_name, [(None, u) for u in users],
               ck_proto.ProtobufSerializer(User, registry, {"use.deprecated.format": False}))
    theirs = ck_consume(target.bootstrap, topic_name, 20,
                        ck_proto.ProtobufDeserializer(User, {"use.deprecated.format": False}))
    ours = gregor_consume(target.bootstrap, topic_name, 20, **{
        "value.deserializer": ProtobufDeserializer(schema_registry_client=registry)})
    assert [v for _, v in theirs] == users * 2
    assert [(v.name, v.age, v.home.city) for _, v in ours] == [
        (u.name, u.age, u.home.city) for u in users] * 2
