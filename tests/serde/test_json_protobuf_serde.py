"""gregor.serde's JSON Schema and Protobuf serde beside confluent-kafka's, on one registry
(confluent-kafka's mock client): each reads what the other writes; invalid values are refused
before anything is sent."""
import json

import pytest

from gregor.serde import NotFramedError, SerializationError
from gregor.serde.json_schema import JSONDeserializer, JSONSerializer
from gregor.serde.protobuf import ProtobufDeserializer, ProtobufSerializer, index_path

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[json,protobuf] is a test dependency")
from confluent_kafka.schema_registry import json_schema as ck_json  # noqa: E402
from confluent_kafka.schema_registry import protobuf as ck_proto  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from tests.serde.proto_messages import Address, User  # noqa: E402

ORDER = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
                    "type": "object", "properties": {
                        "id": {"type": "integer"}, "item": {"type": "string"},
                        "price": {"type": "number", "minimum": 0}},
                    "required": ["id", "item"], "additionalProperties": False})


@pytest.fixture
def registry():
    return ck_sr.SchemaRegistryClient.new_client({"url": "mock://json-proto"})


def ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def test_json_each_side_reads_the_other(registry):
    value = {"id": 5, "item": "café", "price": 2.5}
    ours = JSONSerializer(ORDER, registry).serialize("orders", value)
    assert ours == b"\x00\x00\x00\x00\x01" + '{"id":5,"item":"café","price":2.5}'.encode()
    assert ck_json.JSONDeserializer(ORDER)(ours, ctx("orders")) == value
    theirs = ck_json.JSONSerializer(ORDER, registry)(value, ctx("orders"))
    assert theirs == ours
    de = JSONDeserializer(schema_registry_client=registry)
    assert de.deserialize("orders", theirs) == value


@pytest.mark.parametrize("bad, where", [({"id": 1}, "'item' is a required"),
                                        ({"id": 1, "item": "x", "price": -1}, "price"),
                                        ({"id": "1", "item": "x"}, "at id"),
                                        ({"id": 1, "item": "x", "extra": 1}, "extra")])
def test_json_invalid_values_are_refused_before_sending(registry, bad, where):
    ser = JSONSerializer(ORDER, registry)
    with pytest.raises(SerializationError, match=where):
        ser.serialize("orders", bad)
    assert registry.get_subjects() == []      # nothing was registered for a refused value


def test_json_deserializer_refuses_bytes_that_break_the_schema(registry):
    ser = ck_json.JSONSerializer(json.dumps({"type": "object"}), registry)
    data = ser({"id": "x"}, ctx("o"))
    with pytest.raises(SerializationError, match="does not match"):
        JSONDeserializer(ORDER).deserialize("o", data)
    with pytest.raises(NotFramedError):
        JSONDeserializer(ORDER).deserialize("o", b'{"id":1,"item":"x"}')


def test_json_invalid_schema_is_refused(registry):
    with pytest.raises(SerializationError, match="invalid JSON Schema"):
        JSONSerializer('{"type": "nope"}', registry)


def _user():
    u = User(name="Al", age=3, tag={"label": "vip"}, home=Address(city="Oslo"))
    u.at.seconds = 1_700_000_000
    return u


def test_protobuf_index_paths():
    assert index_path(User.DESCRIPTOR) == [1]
    assert index_path(Address.DESCRIPTOR) == [1, 0]


def test_protobuf_gregor_writes_what_confluent_reads(registry):
    data = ProtobufSerializer(User, registry).serialize("users", _user())
    assert data[5:7] == b"\x02\x02"          # index path [1]: count 1, index 1 (zigzag)
    got = ck_proto.ProtobufDeserializer(User, {"use.deprecated.format": False})(data,
                                                                                ctx("users"))
    assert got == _user()
    # the import was registered as a reference under its own path, as confluent-kafka does
    assert set(registry.get_subjects()) == {"users-value", "test/common.proto"}


def test_protobuf_confluent_writes_what_gregor_reads(registry):
    data = ck_proto.ProtobufSerializer(User, registry, {"use.deprecated.format": False})(
        _user(), ctx("users"))
    assert ProtobufDeserializer(User).deserialize("users", data) == _user()
    assert data == ProtobufSerializer(User, registry).serialize("users", _user())
    # no class given: built from the registry's descriptor (and its references)
    dyn = ProtobufDeserializer(schema_registry_client=registry).deserialize("users", data)
    assert dyn.DESCRIPTOR.full_name == "test.User"
    assert (dyn.name, dyn.tag.label, dyn.home.city, dyn.at.seconds) == ("Al", "vip", "Oslo",
                                                                       1_700_000_000)


def test_protobuf_nested_message_and_wrong_types(registry):
    data = ProtobufSerializer(Address, registry).serialize("addr", Address(city="Rome"))
    assert data[5:8] == b"\x04\x02\x00"      # [1, 0]
    assert ProtobufDeserializer(schema_registry_client=registry).deserialize(
        "addr", data).city == "Rome"
    with pytest.raises(SerializationError, match="expected a test.User"):
        ProtobufSerializer(User, registry).serialize("users", Address(city="x"))
    with pytest.raises(SerializationError, match="index path"):
        ProtobufDeserializer(schema_registry_client=registry).deserialize(
            "addr", data[:5] + b"\x02\x0e" + data[8:])
