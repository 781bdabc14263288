"""The Schema-Registry read/write options of the gregor source, without a SparkSession:
which options are needed, the errors for wrong ones, the default subjects, and the Spark
types a subject's schema becomes."""
import json

import pyarrow as pa
import pytest

from gregor.spark import confluent
from gregor.spark.options import OptionError


def test_no_format_means_binary_columns():
    assert confluent.parse({"subscribe": "t"}, "t") is None


def test_default_subjects_and_registry_options():
    opts = confluent.parse({"valueformat": "avro", "KeyFormat": "json",
                            "schemaRegistryUrl": "http://h:1",
                            "schemaRegistry.basic.auth.user.info": "u:p"}, "orders")
    assert {(f.column, f.format, f.subject) for f in opts.fields} == {
        ("value", "avro", "orders-value"), ("key", "json", "orders-key")}
    assert opts.registry_conf == {"basic.auth.user.info": "u:p"}
    assert not opts.permissive
    assert confluent.single_topic({"subscribe": "a,b"}) is None
    assert confluent.single_topic({"subscribe": "a"}) == "a"


@pytest.mark.parametrize("options, match", [
    ({"valueFormat": "csv", "schemaRegistryUrl": "http://h:1"}, "use one of avro, json"),
    ({"valueFormat": "avro"}, "'schemaRegistryUrl' must be set"),
    ({"valueFormat": "avro", "schemaRegistryUrl": "http://h:1", "mode": "DROP"},
     "FAILFAST"),
])
def test_wrong_options_are_named(options, match):
    with pytest.raises(OptionError, match=match):
        confluent.parse(options, "t")


def test_several_topics_need_a_subject():
    with pytest.raises(OptionError, match="'valueSubject' must be set"):
        confluent.parse({"valueFormat": "avro", "schemaRegistryUrl": "http://h:1"}, None)


def test_json_and_avro_schemas_as_arrow_types():
    f = confluent.FieldFormat("value", "json", "s", json.dumps({
        "type": "object", "properties": {"id": {"type": "integer"},
                                         "tags": {"type": "array", "items": {"type": "string"}},
                                         "any": {}}}), "JSON")
    assert confluent.arrow_type_of(f) == pa.struct([("id", pa.int64()),
                                                    ("tags", pa.list_(pa.string())),
                                                    ("any", pa.string())])
    f = confluent.FieldFormat("value", "avro", "s", json.dumps({
        "type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "long"]}]}))
    assert confluent.arrow_type_of(f) == pa.struct([("a", pa.int64())])


def test_sink_checks_encoded_columns_as_binary():
    opts = confluent.parse({"valueFormat": "avro", "schemaRegistryUrl": "http://h:1"}, "t")
    assert confluent.sink_fields([("value", "struct<a:int>"), ("key", "string")], opts) == [
        ("value", "binary"), ("key", "string")]


def test_json_and_protobuf_columns_decode_with_offsets_of_bad_rows():
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    from gregor.serde.json_schema import JSONSerializer
    from gregor.serde.protobuf import ProtobufSerializer
    from gregor.spark.confluent_json import JsonColumnDecoder
    from gregor.spark.confluent_protobuf import ProtobufColumnDecoder
    from tests.serde.proto_messages import Address, User
    reg = ck_sr.SchemaRegistryClient.new_client({"url": "mock://spark-columns"})
    schema = json.dumps({"type": "object", "properties": {"id": {"type": "integer"},
                                                          "n": {"type": "object"}}})
    ser = JSONSerializer(schema, reg)
    values = pa.array([ser.serialize("t", {"id": 1, "n": {"x": 1}}), None, b"{}"], pa.binary())
    with pytest.raises(ValueError, match="magic") as e:
        JsonColumnDecoder(schema, False).decode(values)
    assert e.value.row == 2
    got, _ = JsonColumnDecoder(schema, True).decode(values)
    assert got.to_pylist() == [{"id": 1, "n": '{"x": 1}'}, None, None]

    data = ProtobufSerializer(User, reg).serialize("u", User(name="a", age=2,
                                                              home=Address(city="c")))
    latest = reg.get_latest_version("u-value")
    f = confluent.FieldFormat("value", "protobuf", "u-value", latest.schema.schema_str,
                              "PROTOBUF", "test.User")
    dec = ProtobufColumnDecoder(f, reg, False)
    got, _ = dec.decode(pa.array([data], pa.binary()))
    row = got.to_pylist()[0]
    assert (row["name"], row["age"], row["home"], row["tag"]) == ("a", 2, {"city": "c"}, None)
    assert got.type.field("at").type == pa.struct([("seconds", pa.int64()),
                                                   ("nanos", pa.int32())])


def test_decoded_columns_take_the_arrow_types_spark_expects():
    # Avro timestamp-millis decodes as ms; Spark's TimestampType is microseconds
    at = pa.array([1, 2], pa.timestamp("ms", tz="UTC"))
    got = confluent.spark_arrow(pa.StructArray.from_arrays([at], ["at"]))
    assert got.type == pa.struct([("at", pa.timestamp("us", tz="UTC"))])
    assert got.field("at").cast(pa.int64()).to_pylist() == [1000, 2000]
