"""gregor.serde's Avro serde beside confluent-kafka's AvroSerializer / AvroDeserializer, both
on one registry (confluent-kafka's mock client): each reads what the other writes, the bytes
are the same, and bad values or bytes are refused with the reason."""
import json

import pytest

from gregor.serde import (AvroDeserializer, AvroSerializer, NotFramedError,
                          SerializationError, UnknownSchemaError)

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import (AvroDeserializer as CkDeserializer,  # noqa
                                                  AvroSerializer as CkSerializer)
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

USER = json.dumps({"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "long"},
    {"name": "email", "type": ["null", "string"], "default": None}]})


@pytest.fixture
def registry():
    return ck_sr.SchemaRegistryClient.new_client({"url": "mock://serde"})


def ctx(topic, field=MessageField.VALUE):
    return SerializationContext(topic, field)


def test_gregor_writes_what_confluent_reads_and_the_bytes_match(registry):
    ours = AvroSerializer(registry, USER)
    theirs = CkSerializer(registry, USER)
    value = {"name": "Al", "age": 3}
    data = ours.serialize("orders", value)
    assert data == b"\x00\x00\x00\x00\x01\x04Al\x06"     # the registry's first id: 1
    assert data == theirs(value, ctx("orders"))
    assert CkDeserializer(registry)(data, ctx("orders")) == value
    assert registry.get_latest_version("orders-value").schema_id == 1


def test_confluent_writes_what_gregor_reads(registry):
    data = CkSerializer(registry, USER)({"name": "Bo", "age": 40}, ctx("t"))
    assert AvroDeserializer(registry).deserialize("t", data) == {"name": "Bo", "age": 40}


def test_key_field_uses_the_key_subject(registry):
    ours = AvroSerializer(registry, '"string"').bind_field("key")
    data = ours.serialize("t", "k1")
    assert registry.get_latest_version("t-key").schema_id == int.from_bytes(data[1:5], "big")
    assert CkDeserializer(registry)(data, ctx("t", MessageField.KEY)) == "k1"


def test_old_records_resolve_into_the_latest_schema(registry):
    old = AvroSerializer(registry, USER).serialize("t", {"name": "Al", "age": 3})
    new = AvroSerializer(registry, USER_V2).serialize("t", {"name": "Bo", "age": 2**40,
                                                            "email": "b@x"})
    de = AvroDeserializer(registry, conf={"use.latest.version": True})
    assert de.deserialize("t", old) == {"name": "Al", "age": 3, "email": None}
    assert de.deserialize("t", new)["age"] == 2**40
    # confluent-kafka's reader agrees on the resolution
    ck = CkDeserializer(registry, conf={"use.latest.version": True})
    assert ck(old, ctx("t")) == {"name": "Al", "age": 3, "email": None}


def test_use_latest_version_writes_with_the_registered_schema(registry):
    AvroSerializer(registry, USER).serialize("t", {"name": "a", "age": 1})
    AvroSerializer(registry, USER_V2).serialize("t", {"name": "a", "age": 1})
    ser = AvroSerializer(registry, USER, {"use.latest.version": True,
                                          "auto.register.schemas": False})
    data = ser.serialize("t", {"name": "x", "age": 5, "email": None})
    assert int.from_bytes(data[1:5], "big") == registry.get_latest_version("t-value").schema_id


def test_auto_register_off_needs_the_schema_registered(registry):
    ser = AvroSerializer(registry, USER, {"auto.register.schemas": False})
    with pytest.raises(Exception, match="(?i)not found"):
        ser.serialize("t", {"name": "a", "age": 1})
    registry.register_schema("t-value", ck_sr.Schema(USER, "AVRO"))
    assert ser.serialize("t", {"name": "a", "age": 1})[5:] == b"\x02a\x02"


@pytest.mark.parametrize("strategy, subject", [("record", "ex.User"),
                                               ("topic_record", "t-ex.User")])
def test_subject_name_strategies(registry, strategy, subject):
    AvroSerializer(registry, USER, {"subject.name.strategy": strategy}).serialize(
        "t", {"name": "a", "age": 1})
    assert registry.get_subjects() == [subject]


def test_values_that_do_not_match_are_refused(registry):
    ser = AvroSerializer(registry, USER)
    with pytest.raises(SerializationError, match="does not match"):
        ser.serialize("t", {"name": "a", "age": "old"})
    with pytest.raises(SerializationError, match="does not match"):
        ser.serialize("t", {"name": "a"})


def test_unframed_and_unknown_ids_are_refused(registry):
    de = AvroDeserializer(registry)
    with pytest.raises(NotFramedError, match="magic byte"):
        de.deserialize("t", b"\x02a\x02")
    with pytest.raises(UnknownSchemaError, match="schema id 99"):
        de.deserialize("t", b"\x00\x00\x00\x00\x63\x02a\x02")
    AvroSerializer(registry, USER).serialize("t", {"name": "a", "age": 1})
    with pytest.raises(SerializationError, match="does not decode"):
        de.deserialize("t", b"\x00\x00\x00\x00\x01\x08ab")


def test_unknown_options_are_refused(registry):
    with pytest.raises(ValueError, match="unknown serializer config"):
        AvroSerializer(registry, USER, {"auto.register": True})
    with pytest.raises(ValueError, match="subject.name.strategy"):
        AvroSerializer(registry, USER, {"subject.name.strategy": "nope"})
