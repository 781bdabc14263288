"""The columnar Avro encoder (Arrow columns -> Confluent-framed Avro) against fastavro's
schemaless_writer row by row, byte for byte: the Spark-derived types, hand-written schemas,
sliced arrays, hypothesis over derived schemas and their values; the fallback and errors.
In the pure-Python lane (GREGOR_PURE_PYTHON=1) the encoder is absent and encode_rows' bytes
are checked by reading them back with fastavro."""
import datetime as dt
import decimal
import io
import json
import os

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.serde import SerializationError, avro_encode
from gregor.serde.avro_arrow import encode_rows, encode_rows_fastavro
from gregor.serde.avro_schema import parse_avro
from gregor.serde.avro_types import avro_schema
from gregor.serde.framing import header

HEAD = header(7)
PURE = bool(os.environ.get("GREGOR_PURE_PYTHON"))
columnar = pytest.mark.skipif(PURE, reason="GREGOR_PURE_PYTHON=1: the compiled encoder is off")

SPARK_TYPES = pa.struct([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i", pa.int32()),
    ("l", pa.int64()), ("f", pa.float32()), ("d", pa.float64()), ("s", pa.string()),
    ("y", pa.binary()), ("dec", pa.decimal128(38, 6)), ("small", pa.decimal128(4, 2)),
    ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("day", pa.date32()),
    ("a", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int64())),
    ("sub", pa.struct([("x", pa.int64()), ("tags", pa.list_(pa.struct([("k", pa.string())])))])),
    pa.field("req", pa.int64(), nullable=False)])
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def spark_row(i):
    return {"b": i % 2 == 0, "i8": -128 + i % 256, "i16": -(i * 97) % 32768,
            "i": [-2**31, 2**31 - 1, 0, i][i % 4], "l": [-2**63, 2**63 - 1, i * 2**33][i % 3],
            "f": i / 8, "d": -i / 3, "s": "é" * (i % 4), "y": bytes(range(i % 7)),
            "dec": decimal.Decimal(i * 10**20 - 128).scaleb(-6) * (-1) ** i,
            "small": decimal.Decimal([-128, 127, -1, 0, 9999][i % 5]).scaleb(-2),
            "ts": EPOCH + dt.timedelta(microseconds=i * 123456789),
            "ntz": dt.datetime(2001, 2, 3) + dt.timedelta(seconds=i),
            "day": dt.date(1969, 12, 1) + dt.timedelta(days=i),
            "a": [f"x{j}" for j in range(i % 3)] if i % 5 else [],
            "m": [(f"k{j}", None if j == 1 else j) for j in range(i % 4)],
            "sub": None if i % 6 == 0 else {"x": i, "tags": [{"k": None}, {"k": "v"}][:i % 3]},
            "req": i}


def null_row(i):
    return {**{n: None for n in SPARK_TYPES.names}, "req": i}


def derived(t):
    return parse_avro(json.dumps(avro_schema(t, "topLevelRecord")))


def fastavro_back(values, parsed):
    return [None if v is None else
            fastavro.schemaless_reader(io.BytesIO(v[len(HEAD):]), parsed, None)
            for v in values.to_pylist()]


def test_the_compiled_encoder_is_built_unless_told_not_to_use_it():
    assert avro_encode.available() is not PURE, "gregor/serde/_avro_encode.pyx is not built"


@columnar
def test_spark_types_byte_for_byte():
    rows = [spark_row(i) for i in range(200)] + [null_row(1), None, null_row(2)]
    arr = pa.array(rows, SPARK_TYPES)
    parsed = derived(SPARK_TYPES)
    got = avro_encode.encode(arr, HEAD, parsed)
    assert got.to_pylist() == encode_rows_fastavro(arr, HEAD, parsed).to_pylist()
    assert got.null_count == 1
    for start, length in ((1, 50), (77, 3), (201, 2), (0, 0)):
        part = arr.slice(start, length)
        assert avro_encode.encode(part, HEAD, parsed).to_pylist() == \
            encode_rows_fastavro(part, HEAD, parsed).to_pylist()


def test_encode_rows_reads_back_with_fastavro():
    """Both lanes: what encode_rows writes (columnar or not) is what fastavro reads."""
    rows = [spark_row(i) for i in range(30)] + [None]
    arr = pa.array(rows, SPARK_TYPES)
    parsed = derived(SPARK_TYPES)
    back = fastavro_back(encode_rows(arr, 7, parsed), parsed)
    want = pa.array(rows, SPARK_TYPES).to_pylist(maps_as_pydicts="strict")
    assert [None if b is None else {**b, "m": dict(b["m"])} for b in back] == want


HAND = json.dumps({"type": "record", "name": "Row", "namespace": "t", "fields": [
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "first", "type": ["null", "long"]}, {"name": "last", "type": ["string", "null"]},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "n", "type": "null"},
    {"name": "sub", "type": ["null", {"type": "record", "name": "Sub", "fields": [
        {"name": "x", "type": "float"}]}]},
    {"name": "again", "type": ["null", "Sub"]},
    {"name": "dbl", "type": "double"}]})
HAND_TYPE = pa.struct([("fx", pa.binary(4)), ("e", pa.string()), ("first", pa.int64()),
                       ("last", pa.string()), ("ms", pa.timestamp("ms", tz="UTC")),
                       ("tm", pa.time32("ms")), ("n", pa.null()),
                       ("sub", pa.struct([("x", pa.float32())])),
                       ("again", pa.struct([("x", pa.float32())])), ("dbl", pa.float32()),
                       ("extra", pa.string())])


@columnar
def test_hand_written_schema_byte_for_byte():
    rows = [{"fx": i.to_bytes(4, "big"), "e": ["RED", "GREEN"][i % 2],
             "first": None if i % 3 else i, "last": None if i % 2 else "z",
             "ms": EPOCH + dt.timedelta(milliseconds=i * 1001), "tm": dt.time(0, 0, i % 60),
             "n": None, "sub": None if i % 4 == 0 else {"x": i / 2},
             "again": {"x": -1.0} if i % 5 == 0 else None, "dbl": i / 4, "extra": "x"}
            for i in range(64)]
    arr = pa.array(rows, HAND_TYPE)
    parsed = parse_avro(HAND)
    assert avro_encode.encode(arr, HEAD, parsed).to_pylist() == \
        encode_rows_fastavro(arr, HEAD, parsed).to_pylist()


def test_unsupported_pairs_fall_back_to_fastavro():
    union = parse_avro(json.dumps({"type": "record", "name": "U", "fields": [
        {"name": "v", "type": ["long", "string"]}]}))
    arr = pa.array([{"v": 5}, {"v": 6}], pa.struct([("v", pa.int64())]))
    with pytest.raises(avro_encode.Unsupported):
        avro_encode.encode(arr, HEAD, union)
    assert fastavro_back(encode_rows(arr, 7, union), union) == [{"v": 5}, {"v": 6}]
    # an enum value that is no symbol: fastavro's error
    enum = parse_avro(json.dumps({"type": "enum", "name": "E", "symbols": ["A"]}))
    with pytest.raises(SerializationError):
        encode_rows(pa.array(["A", "B"]), 7, enum)


def test_a_null_without_a_null_branch_is_refused():
    parsed = derived(pa.struct([pa.field("x", pa.int64(), nullable=False)]))
    arr = pa.array([{"x": 1}, {"x": None}], pa.struct([("x", pa.int64())]))
    with pytest.raises(SerializationError, match="row 1|does not match"):
        encode_rows(arr, 7, parsed)


def _types(depth):
    leaf = st.sampled_from([pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(),
                            pa.uint8(), pa.uint16(), pa.uint32(), pa.float32(), pa.float64(),
                            pa.string(), pa.binary(), pa.date32(), pa.timestamp("us", "UTC"),
                            pa.timestamp("ms", "UTC"), pa.timestamp("us"),
                            pa.decimal128(9, 3), pa.decimal128(38, 0)])
    if depth == 0:
        return leaf
    inner = _types(depth - 1)
    return st.one_of(leaf, inner.map(pa.list_), inner.map(lambda t: pa.map_(pa.string(), t)),
                     _struct(inner))


def _struct(inner):
    return st.lists(st.tuples(inner, st.booleans()), min_size=1, max_size=4).map(
        lambda fs: pa.struct([pa.field(f"f{i}", t, nullable=n) for i, (t, n) in enumerate(fs)]))


_INT_RANGE = {pa.int8(): 2**7, pa.int16(): 2**15, pa.int32(): 2**31, pa.int64(): 2**63}


def _values(t, nullable=True):
    if pa.types.is_struct(t):
        v = st.fixed_dictionaries({f.name: _values(f.type, f.nullable) for f in t})
    elif pa.types.is_list(t):
        v = st.lists(_values(t.value_type), max_size=3)
    elif pa.types.is_map(t):
        v = st.dictionaries(st.text(max_size=3), _values(t.item_type), max_size=3).map(
            lambda d: list(d.items()))
    elif pa.types.is_boolean(t):
        v = st.booleans()
    elif pa.types.is_unsigned_integer(t):
        v = st.integers(0, 2 ** t.bit_width - 1)
    elif pa.types.is_integer(t):
        r = _INT_RANGE[t]
        v = st.integers(-r, r - 1)
    elif pa.types.is_floating(t):
        v = st.floats(width=t.bit_width, allow_nan=False)
    elif pa.types.is_string(t):
        v = st.text(max_size=5)
    elif pa.types.is_binary(t):
        v = st.binary(max_size=5)
    elif pa.types.is_date32(t):
        v = st.dates().map(lambda d: (d - dt.date(1970, 1, 1)).days)
    elif pa.types.is_timestamp(t):
        v = st.integers(-10**15, 10**15) if t.unit == "us" else st.integers(-10**12, 10**12)
    else:
        v = st.integers(-(10 ** t.precision - 1), 10 ** t.precision - 1).map(
            lambda k, s=t.scale: decimal.Decimal(k).scaleb(-s))
    return st.one_of(st.none(), v) if nullable else v


@st.composite
def typed_rows(draw):
    t = draw(_struct(_types(1)))
    rows = draw(st.lists(st.one_of(st.none(), _values(t, False)), max_size=12))
    return t, rows


@columnar
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_rows())
def test_hypothesis_derived_schemas_byte_for_byte(tr):
    t, rows = tr
    arr = pa.array(rows, t)
    parsed = derived(t)
    assert avro_encode.encode(arr, HEAD, parsed).to_pylist() == \
        encode_rows_fastavro(arr, HEAD, parsed).to_pylist()
