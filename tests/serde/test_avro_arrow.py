"""Confluent-framed Avro <-> Arrow columns: the compiled decoder against fastavro (the
reference), schema evolution across writer ids in one array, bad records, the encoder."""
import datetime as dt
import json
import os

import numpy as np
import pyarrow as pa
import pytest

from gregor.serde import AvroSerializer, SerializationError
from gregor.serde import avro_arrow
from gregor.serde.avro_arrow import AvroArrowDecoder, AvroArrowEncoder, RecordDecodeError

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkDeserializer  # noqa
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

EVERYTHING = json.dumps({"type": "record", "name": "Row", "namespace": "t", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "y", "type": "bytes"},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "ns", "type": ["null", "string"], "default": None},
    {"name": "ni", "type": ["long", "null"]},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "sub", "type": ["null", {"type": "record", "name": "Sub", "fields": [
        {"name": "x", "type": "int"}, {"name": "z", "type": ["null", "string"]}]}]},
    {"name": "again", "type": ["null", "Sub"], "default": None}]})


def row(i):
    return {"b": i % 2 == 0, "i": -i, "l": i * 2**33, "f": i / 4, "d": i / 3, "s": f"s{i}" * (i % 3),
            "y": bytes([i % 256]) * (i % 5), "fx": i.to_bytes(4, "big"),
            "e": "GREEN" if i % 3 else "RED", "ns": None if i % 4 == 0 else f"n{i}",
            "ni": None if i % 5 == 0 else i, "ts": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
            + dt.timedelta(milliseconds=i), "day": dt.date(2020, 1, 1) + dt.timedelta(days=i),
            "sub": None if i % 3 == 0 else {"x": i, "z": None if i % 2 else "z"},
            "again": {"x": 1, "z": "a"} if i % 7 == 0 else None}


@pytest.fixture
def registry():
    return ck_sr.SchemaRegistryClient.new_client({"url": "mock://arrow"})


def framed(registry, schema, rows, topic="t"):
    ser = AvroSerializer(registry, schema)
    return pa.array([None if r is None else ser.serialize(topic, r) for r in rows], pa.binary())


def reference(registry, values, topic="t", reader=None):
    """confluent-kafka's AvroDeserializer, record by record, as the expected rows."""
    de = CkDeserializer(registry, reader)
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [None if v is None else de(v, ctx) for v in values.to_pylist()]


def test_the_compiled_decoder_is_built_unless_told_not_to_use_it():
    """`make venv` compiles it; a broken build must fail here, not just run slower."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        assert avro_arrow._compiled is None
    else:
        assert avro_arrow._compiled is not None, "gregor/serde/_avro_columns.pyx is not built"


def test_decoder_matches_confluent_kafka_row_by_row(registry):
    rows = [row(i) for i in range(300)] + [None]
    values = framed(registry, EVERYTHING, rows)
    dec = AvroArrowDecoder(registry, subject="t-value")
    got, bad = dec.decode(values)
    # the compiled path ran (unless GREGOR_PURE_PYTHON=1 asked for the fastavro path)
    assert (dec._writers[1].program is not None) == (avro_arrow._compiled is not None)
    assert bad.size == 0
    assert got.type == dec.arrow_type
    assert got.to_pylist() == reference(registry, values)


def test_fastavro_path_gives_the_same_arrays(registry):
    values = framed(registry, EVERYTHING, [row(i) for i in range(50)])
    compiled, _ = AvroArrowDecoder(registry, subject="t-value").decode(values)
    dec = AvroArrowDecoder(registry, subject="t-value")
    dec._writer(1).program = None
    slow, _ = dec.decode(values)
    assert slow.type == compiled.type
    assert slow.to_pylist() == compiled.to_pylist()


V1 = json.dumps({"type": "record", "name": "U", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "gone", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "U", "fields": [
    {"name": "age", "type": "long"}, {"name": "full_name", "type": "string",
                                      "aliases": ["name"]},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "score", "type": "double", "default": 1.5}]})


def test_older_writers_resolve_into_the_latest_schema_in_row_order(registry):
    old = framed(registry, V1, [{"name": f"o{i}", "age": i, "gone": "x"} for i in range(3)])
    new = framed(registry, V2, [{"age": 2**40, "full_name": "n", "email": "e", "score": 2.0}])
    values = pa.array([old[0].as_py(), new[0].as_py(), old[1].as_py(), None, old[2].as_py()],
                      pa.binary())
    got, _ = AvroArrowDecoder(registry, subject="t-value").decode(values)
    assert [f.name for f in got.type] == ["age", "full_name", "email", "score"]
    assert got.type.field("age").type == pa.int64()
    assert got.to_pylist() == [
        {"age": 0, "full_name": "o0", "email": None, "score": 1.5},
        {"age": 2**40, "full_name": "n", "email": "e", "score": 2.0},
        {"age": 1, "full_name": "o1", "email": None, "score": 1.5}, None,
        {"age": 2, "full_name": "o2", "email": None, "score": 1.5}]
    assert got.to_pylist() == reference(registry, values, reader=V2)


def test_bad_records_name_their_row_or_become_null_when_permissive(registry):
    good = framed(registry, V1, [{"name": "a", "age": 1, "gone": "x"}])[0].as_py()
    unknown = b"\x00\x00\x00\x00\x63" + good[5:]
    truncated = good[:7]
    for bad_value, match in [(b"plain", "no magic byte"), (unknown, "schema id 99"),
                             (truncated, "does not decode")]:
        values = pa.array([good, good, bad_value, good], pa.binary())
        with pytest.raises(RecordDecodeError, match=match) as e:
            AvroArrowDecoder(registry, subject="t-value").decode(values)
        assert e.value.row == 2
        got, bad = AvroArrowDecoder(registry, subject="t-value", permissive=True).decode(values)
        assert bad.tolist() == [2]
        assert got.to_pylist()[2] is None and got.to_pylist()[3] == {
            "name": "a", "age": 1, "gone": "x"}


def test_encoder_writes_what_confluent_kafka_reads(registry):
    table = pa.table({"id": pa.array([1, 2, None], pa.int64()),
                      "name": ["a", None, "c"],
                      "at": pa.array([0, 1, 2], pa.timestamp("ms", tz="UTC")),
                      "nested": pa.array([{"x": 1.5}, None, {"x": -1.0}],
                                         pa.struct([("x", pa.float64())]))})
    enc = AvroArrowEncoder(registry, "out-value", record_name="Out", namespace="ex")
    values = enc.encode(table)
    assert json.loads(registry.get_latest_version("out-value").schema.schema_str)["name"] == "Out"
    got = reference(registry, values, topic="out")
    assert [r["id"] for r in got] == [1, 2, None]
    assert [r["nested"] for r in got] == [{"x": 1.5}, None, {"x": -1.0}]
    back, _ = AvroArrowDecoder(registry, subject="out-value").decode(values)
    assert back.to_pylist() == pa.StructArray.from_arrays(
        [table.column(c).combine_chunks() for c in table.column_names],
        table.column_names).to_pylist()


def test_encoder_refuses_rows_the_schema_does_not_allow(registry):
    enc = AvroArrowEncoder(registry, "o-value", json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}))
    with pytest.raises(SerializationError, match="does not match"):
        enc.encode(pa.table({"id": pa.array([1, None], pa.int64())}))
