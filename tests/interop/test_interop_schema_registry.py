"""gregor's Schema Registry judged by confluent-kafka 2.16: its SchemaRegistryClient for the
REST API, and its AvroSerializer / AvroDeserializer carrying records through the broker
under test (the serializers call GET /associations first and fall back on its 404)."""
from __future__ import annotations

import json
import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[schemaregistry] is a test dependency")
pytest.importorskip("fastavro", reason="confluent-kafka[avro] is a test dependency")
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import (AvroDeserializer,  # noqa: E402
                                                  AvroSerializer)
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from gregor.registry.server import RegistryThread  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "io.gregor", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "io.gregor", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "long"},
    {"name": "email", "type": ["null", "string"], "default": None}]})
USER_BAD = json.dumps({"type": "record", "name": "User", "namespace": "io.gregor", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "string"}]})


@pytest.fixture(scope="module")
def registry_url(target):
    with RegistryThread({"bootstrap.servers": target.bootstrap}) as r:
        yield r.url


@pytest.fixture
def client(registry_url):
    return SchemaRegistryClient({"url": registry_url})


def fresh(client):
    # each test its own client: confluent-kafka caches answers per client
    return SchemaRegistryClient({"url": client._rest_client.base_urls[0]})


def test_register_get_lookup(client, topic_name):
    subject = f"{topic_name}-value"
    sid = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert client.register_schema(subject, Schema(USER_V1, "AVRO")) == sid
    other = fresh(client)
    assert json.loads(other.get_schema(sid).schema_str) == json.loads(USER_V1)
    latest = other.get_latest_version(subject)
    assert (latest.schema_id, latest.version, latest.subject) == (sid, 1, subject)
    assert other.get_version(subject, 1).schema_id == sid
    found = other.lookup_schema(subject, Schema(USER_V1, "AVRO"))
    assert (found.schema_id, found.version) == (sid, 1)
    assert subject in other.get_subjects()
    assert other.get_versions(subject) == [1]
    # the same schema under another subject keeps its id
    assert other.register_schema(f"{subject}-copy", Schema(USER_V1, "AVRO")) == sid


def test_compatibility_and_config(client, topic_name):
    subject = f"{topic_name}-value"
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO")) is True
    assert client.test_compatibility(subject, Schema(USER_BAD, "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema(USER_BAD, "AVRO"))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert client.set_compatibility(subject, "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility(subject) == "NONE"
    assert client.register_schema(subject, Schema(USER_BAD, "AVRO")) > 0
    assert client.get_compatibility() == "BACKWARD"
    with pytest.raises(SchemaRegistryError) as e:
        client.set_compatibility(subject, "NEVER")
    assert e.value.error_code == 42203


def test_deletes_soft_and_hard(client, topic_name):
    subject = f"{topic_name}-value"
    sid = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    client.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert client.delete_version(subject, 1) == 1
    with pytest.raises(SchemaRegistryError) as e:
        fresh(client).get_version(subject, 1)
    assert e.value.error_code == 40402
    assert json.loads(fresh(client).get_schema(sid).schema_str) == json.loads(USER_V1)
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject(subject, permanent=True)
    assert e.value.error_code == 40405
    assert client.delete_subject(subject) == [2]
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as e:
        fresh(client).get_latest_version(subject)
    assert e.value.error_code == 40401


def test_avro_serializer_through_the_broker(client, target, topic_name):
    target_topic = topic_name
    ser = AvroSerializer(client, USER_V1)
    values = [{"name": f"u{i}", "age": i} for i in range(25)]
    p = ck.Producer({"bootstrap.servers": target.bootstrap})
    for v in values:
        p.produce(target_topic, value=ser(v, SerializationContext(target_topic,
                                                                   MessageField.VALUE)))
    assert p.flush(TIMEOUT_S) == 0
    sid = fresh(client).get_latest_version(f"{target_topic}-value").schema_id
    c = ck.Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"g-{target_topic}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([target_topic])
    de = AvroDeserializer(fresh(client))   # fetches the writer's schema by id
    got, deadline = [], time.monotonic() + TIMEOUT_S
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            assert m.value()[0] == 0 and int.from_bytes(m.value()[1:5], "big") == sid
            got.append(de(m.value(), SerializationContext(target_topic, MessageField.VALUE)))
    finally:
        c.close()
    assert got == values
    # a reader on a newer schema resolves the old records (Avro's promotions and defaults)
    client.register_schema(f"{target_topic}-value", Schema(USER_V2, "AVRO"))
    reader = AvroDeserializer(fresh(client), USER_V2)
    raw = ser(values[3], SerializationContext(target_topic, MessageField.VALUE))
    assert reader(raw, SerializationContext(target_topic, MessageField.VALUE)) == \
        {"name": "u3", "age": 3, "email": None}


def _consume(target, topic, n):
    c = ck.Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"g-{topic}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + TIMEOUT_S
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    return got


def test_json_serializer_through_the_broker(client, target, topic_name):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Point",
                         "type": "object", "properties": {"x": {"type": "integer"},
                                                          "y": {"type": "integer"}},
                         "required": ["x"]})
    ser = JSONSerializer(schema, client)
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    values = [{"x": i, "y": -i} for i in range(10)]
    p = ck.Producer({"bootstrap.servers": target.bootstrap})
    for v in values:
        p.produce(topic_name, value=ser(v, ctx))
    assert p.flush(TIMEOUT_S) == 0
    latest = fresh(client).get_latest_version(f"{topic_name}-value")
    assert latest.schema.schema_type == "JSON"
    de = JSONDeserializer(None, schema_registry_client=fresh(client))
    assert [de(raw, ctx) for raw in _consume(target, topic_name, len(values))] == values
    # a required property added is refused as Confluent refuses it (BACKWARD)
    stricter = json.loads(schema)
    stricter["required"] = ["x", "y"]
    assert client.test_compatibility(f"{topic_name}-value",
                                     Schema(json.dumps(stricter), "JSON")) is False


def _order_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf import timestamp_pb2  # noqa: F401  (puts timestamp.proto in the pool)
    pool = descriptor_pool.Default()
    name = "gregor.interop.Order"
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    except KeyError:
        pass
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="gregor/interop/order.proto",
                                            package="gregor.interop", syntax="proto3",
                                            dependency=["google/protobuf/timestamp.proto"])
    m = fd.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="at", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".google.protobuf.Timestamp")
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def test_protobuf_serializer_with_a_reference(client, target, topic_name):
    from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                          ProtobufSerializer)
    Order = _order_class()
    ser = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    orders = [Order(id=i) for i in range(5)]
    for o in orders:
        o.at.seconds = 1_700_000_000 + o.id
    p = ck.Producer({"bootstrap.servers": target.bootstrap})
    for o in orders:
        p.produce(topic_name, value=ser(o, ctx))
    assert p.flush(TIMEOUT_S) == 0
    del p
    # registered as a base64 descriptor; the well-known import travels without a reference
    # (the client leaves google/protobuf/* out) and the registry resolves it itself
    # and served as .proto text, as Confluent's registry prints it, unless format=serialized
    latest = fresh(client).get_latest_version(f"{topic_name}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert latest.schema.schema_str == (
        'syntax = "proto3";\npackage gregor.interop;\n\n'
        'import "google/protobuf/timestamp.proto";\n\n'
        'message Order {\n  int64 id = 1;\n  .google.protobuf.Timestamp at = 2;\n}\n')
    assert fresh(client).get_schema(latest.schema_id).schema_str == latest.schema.schema_str
    from google.protobuf import descriptor_pb2
    import base64
    raw = json.loads(urllib_get(client, f"/schemas/ids/{latest.schema_id}?format=serialized"))
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(raw["schema"]))
    assert list(fd.dependency) == ["google/protobuf/timestamp.proto"]
    de = ProtobufDeserializer(Order, {"use.deprecated.format": False}, fresh(client))
    got = [de(raw, ctx) for raw in _consume(target, topic_name, len(orders))]
    assert [(o.id, o.at.seconds) for o in got] == [(o.id, o.at.seconds) for o in orders]


def test_protobuf_registered_as_proto_text(client, target, topic_name):
    """.proto text registered through the REST API; confluent-kafka's serializer (latest
    version) and deserializer fetch it as a descriptor (format=serialized)."""
    from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                          ProtobufSerializer)
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    import base64
    text = ('syntax = "proto3";\npackage gregor.text;\n'
            'message Reading { string sensor = 1; double value = 2; }\n')
    subject = f"{topic_name}-value"
    sid = client.register_schema(subject, Schema(text, "PROTOBUF"))
    served = fresh(client).get_schema(sid)
    assert served.schema_str == ('syntax = "proto3";\npackage gregor.text;\n\n'
                                 'message Reading {\n  string sensor = 1;\n'
                                 '  double value = 2;\n}\n')   # printed as Confluent does
    subject_path = f"/subjects/{subject}/versions/1/schema"
    assert [json.loads(urllib_get(client, p)) for p in (f"/schemas/ids/{sid}/schema",
                                                         subject_path)] == [served.schema_str] * 2
    raw = json.loads(urllib_get(client, f"/schemas/ids/{sid}?format=serialized"))["schema"]
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(raw))
    fd.name = "gregor/text/reading.proto"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    Reading = message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "gregor.text.Reading"))
    ser = ProtobufSerializer(Reading, client, {"use.deprecated.format": False,
                                               "auto.register.schemas": False,
                                               "use.latest.version": True})
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    data = ser(Reading(sensor="s1", value=2.5), ctx)
    assert int.from_bytes(data[1:5], "big") == sid
    de = ProtobufDeserializer(Reading, {"use.deprecated.format": False}, fresh(client))
    got = de(data, ctx)
    assert (got.sensor, got.value) == ("s1", 2.5)


def urllib_get(client, path):
    import urllib.request
    with urllib.request.urlopen(client._rest_client.base_urls[0] + path, timeout=60) as r:
        return r.read()
