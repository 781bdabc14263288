"""Typed Arrow arrays as Confluent-framed Avro, column by column: the tree of nodes the
compiled encoder (_avro_encode.pyx) walks per row, built once per batch from the Avro schema
and the array's buffers (zero-copy where the Arrow layout already is what the encoder reads).

Covered: null, boolean, int/long (any Arrow integer but uint64; date32, time32/64 and
UTC timestamps s/ms/us for timestamp-*, naive ones for local-timestamp-*), float, double, string, bytes, fixed,
enum (from strings), records (struct fields by name), arrays, maps, decimal as bytes
(decimal128 of the schema's scale) and [T, "null"] / ["null", T]. Anything else (other
unions, a field the struct lacks, nanosecond timestamps, mismatched types) raises
Unsupported and the caller writes those rows with fastavro, whose bytes are the reference."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..compiled import load
from .avro_types import named_types, nullable_branch
from .errors import SerializationError

_compiled = load("gregor.serde._avro_encode")

N_NULL, N_BOOL, N_LONG, N_FLOAT, N_DOUBLE, N_BYTES, N_FIXED, N_RECORD, N_ARRAY, N_MAP, \
    N_UNION, N_DECIMAL = range(12)
_EMPTY = np.zeros(0, np.uint8)
_UNIT_SCALE = {"s": 1_000_000, "ms": 1_000, "us": 1}
_INT_LOGICAL = {("int", "date"): pa.types.is_date32,
                ("int", "time-millis"): lambda t: pa.types.is_time32(t) and t.unit == "ms",
                ("long", "time-micros"): lambda t: pa.types.is_time64(t) and t.unit == "us"}
_TIME_LOGICAL = {"timestamp-millis": 1_000, "timestamp-micros": 1,
                 "local-timestamp-millis": 1_000, "local-timestamp-micros": 1}


class Unsupported(Exception):
    """This schema / array pair needs the fastavro path."""


def available() -> bool:
    return _compiled is not None


def _bits(buf, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")[offset:offset + n]


def _valid(arr: pa.Array):
    if arr.null_count == 0:
        return None
    buf = arr.buffers()[0]
    if buf is None:                                  # a null-typed array
        return np.zeros(len(arr), np.uint8)
    return np.ascontiguousarray(_bits(buf, arr.offset, len(arr)))


def _values(arr: pa.Array, dtype) -> np.ndarray:
    buf = arr.buffers()[1]
    if buf is None or len(arr) == 0:
        return np.zeros(0, dtype)
    return np.frombuffer(buf, dtype)[arr.offset:arr.offset + len(arr)]


def _int_dtype(t: pa.DataType):
    width = t.bit_width // 8
    if pa.types.is_integer(t):
        if pa.types.is_uint64(t):
            raise Unsupported("uint64")
        return np.dtype(f"{'u' if pa.types.is_unsigned_integer(t) else 'i'}{width}")
    return np.dtype(f"i{width}")


def _offsets(arr: pa.Array) -> np.ndarray:
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type) or \
        pa.types.is_large_list(arr.type)
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr) + 1, np.int64)
    off = np.frombuffer(buf, np.int64 if large else np.int32)[arr.offset:arr.offset + len(arr) + 1]
    return off.astype(np.int64)


class _Tree:
    def __init__(self):
        self.table: list = []
        self.kids: list = []
        self.valid: list = []
        self.data: list = []
        self.offs: list = []

    def node(self, kind, arr, aux=0, data=None, offs=None, check_valid=True):
        self.table.append([kind, 0, 0, aux])
        self.valid.append(_valid(arr) if check_valid else None)
        self.data.append(None if data is None else np.ascontiguousarray(data).view(np.uint8))
        self.offs.append(offs)
        return len(self.table) - 1

    def children(self, i, kids):
        self.table[i][1] = len(self.kids)
        self.table[i][2] = len(kids)
        self.kids.extend(kids)

    def add(self, arr: pa.Array, s, named: dict) -> int:
        while isinstance(s, str) and s in named:
            s = named[s]
        t = arr.type
        if isinstance(s, list):
            nb = nullable_branch(s)
            if nb is None:
                if len(s) == 1:
                    return self.add(arr, s[0], named)
                raise Unsupported(f"union {s}")
            i = self.node(N_UNION, arr, aux=nb[0], check_valid=False)
            self.children(i, [self.add(arr, nb[1], named)])
            return i
        if isinstance(s, dict):
            kind, logical = s["type"], s.get("logicalType")
            if kind in ("record", "error"):
                return self._record(arr, s, named)
            if kind == "array":
                if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
                    raise Unsupported(f"array from {t}")
                i = self.node(N_ARRAY, arr, offs=_offsets(arr))
                self.children(i, [self.add(arr.values, s["items"], named)])
                return i
            if kind == "map":
                if not pa.types.is_map(t):
                    raise Unsupported(f"map from {t}")
                entries = arr.values
                i = self.node(N_MAP, arr, offs=_offsets(arr))
                self.children(i, [self.add(entries.field(0), "string", named),
                                  self.add(entries.field(1), s["values"], named)])
                return i
            if kind == "enum":
                return self._enum(arr, s)
            if kind == "fixed":
                if logical == "decimal" or not pa.types.is_fixed_size_binary(t) or \
                        t.byte_width != int(s["size"]):
                    raise Unsupported(f"fixed from {t}")
                w = t.byte_width
                buf = arr.buffers()[1]
                data = (np.frombuffer(buf, np.uint8)[arr.offset * w:(arr.offset + len(arr)) * w]
                        if buf is not None and len(arr) else _EMPTY)
                return self.node(N_FIXED, arr, aux=w, data=data)
            if logical == "decimal" and kind == "bytes":
                if not pa.types.is_decimal128(t) or t.scale != int(s.get("scale", 0)) or \
                        t.precision > int(s["precision"]):
                    raise Unsupported(f"decimal from {t}")
                buf = arr.buffers()[1]
                data = (np.frombuffer(buf, np.uint8)[arr.offset * 16:(arr.offset + len(arr)) * 16]
                        if buf is not None and len(arr) else _EMPTY)
                return self.node(N_DECIMAL, arr, data=data)
            if logical in _TIME_LOGICAL and kind == "long":
                return self._timestamp(arr, logical)
            if (kind, logical) in _INT_LOGICAL:
                if not _INT_LOGICAL[(kind, logical)](t):
                    raise Unsupported(f"{logical} from {t}")
                return self.node(N_LONG, arr, data=_values(arr, _int_dtype(t)).astype(np.int64))
            if isinstance(kind, (dict, list)) or kind in named:
                return self.add(arr, kind, named)
            s = kind                                   # a primitive with a logical type
        return self._primitive(arr, s)

    def _record(self, arr, s, named):
        if not pa.types.is_struct(arr.type):
            raise Unsupported(f"record from {arr.type}")
        i = self.node(N_RECORD, arr)
        kids = []
        for f in s["fields"]:
            j = arr.type.get_field_index(f["name"])
            if j < 0:
                raise Unsupported(f"field {f['name']} missing")
            kids.append(self.add(arr.field(j), f["type"], named))
        self.children(i, kids)
        return i

    def _timestamp(self, arr, logical):
        t = arr.type
        # fastavro reads a naive datetime as local time for timestamp-*: only the pairs the
        # derivation makes (UTC <-> timestamp-*, naive <-> local-timestamp-*) are columnar.
        if not pa.types.is_timestamp(t) or t.unit == "ns" or \
                bool(t.tz) == logical.startswith("local-") or \
                _UNIT_SCALE[t.unit] < _TIME_LOGICAL[logical]:
            raise Unsupported(f"{logical} from {t}")
        scale = _UNIT_SCALE[t.unit] // _TIME_LOGICAL[logical]
        values = _values(arr, np.int64)
        return self.node(N_LONG, arr, data=values * scale if scale != 1 else values)

    def _enum(self, arr, s):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise Unsupported(f"enum from {arr.type}")
        idx = pc.index_in(arr, value_set=pa.array(s["symbols"], arr.type))
        if idx.null_count != arr.null_count:
            raise Unsupported("a value that is not a symbol")   # fastavro says which
        return self.node(N_LONG, arr, data=idx.fill_null(0).to_numpy().astype(np.int64))

    def _primitive(self, arr, s):
        t = arr.type
        if s == "null":
            if not pa.types.is_null(t):
                raise Unsupported(f"null from {t}")
            return self.node(N_NULL, arr, check_valid=False)
        if s == "boolean":
            if not pa.types.is_boolean(t):
                raise Unsupported(f"boolean from {t}")
            buf = arr.buffers()[1]
            data = _bits(buf, arr.offset, len(arr)) if buf is not None else _EMPTY
            return self.node(N_BOOL, arr, data=data)
        if s in ("int", "long"):
            if not pa.types.is_integer(t):
                raise Unsupported(f"{s} from {t}")
            return self.node(N_LONG, arr, data=_values(arr, _int_dtype(t)).astype(np.int64))
        if s == "float":
            if not pa.types.is_float32(t):
                raise Unsupported(f"float from {t}")
            return self.node(N_FLOAT, arr, data=_values(arr, np.float32))
        if s == "double":
            if pa.types.is_float64(t):
                return self.node(N_DOUBLE, arr, data=_values(arr, np.float64))
            if pa.types.is_float32(t):
                return self.node(N_DOUBLE, arr, data=_values(arr, np.float32).astype(np.float64))
            raise Unsupported(f"double from {t}")
        if s in ("string", "bytes"):
            if not (pa.types.is_string(t) or pa.types.is_binary(t) or
                    pa.types.is_large_string(t) or pa.types.is_large_binary(t)):
                raise Unsupported(f"{s} from {t}")
            buf = arr.buffers()[2]
            data = np.frombuffer(buf, np.uint8) if buf is not None else _EMPTY
            return self.node(N_BYTES, arr, data=data, offs=_offsets(arr))
        raise Unsupported(str(s))


def encode(values: pa.Array, head: bytes, parsed) -> pa.BinaryArray:
    """Each row of values as head + its Avro encoding (null rows stay null).
    Unsupported when the schema / array pair is not covered; SerializationError when a
    value does not fit the schema (a null where it has no null branch)."""
    if _compiled is None:
        raise Unsupported("the compiled encoder is not built")
    tree = _Tree()
    tree.add(values, parsed, named_types(parsed))
    tree.valid[0] = _valid(values)
    n = len(values)
    payload, offsets, bad, err, node = _compiled.encode_rows(
        n, np.frombuffer(head, np.uint8), np.array(tree.table, np.int64).reshape(-1, 4),
        np.array(tree.kids, np.int64), tree.valid, tree.data, tree.offs)
    if bad >= 0:
        raise SerializationError(f"row {bad} does not match the Avro schema: "
                                 f"{_compiled.ERRORS.get(err, err)}")
    bitmap = None if tree.valid[0] is None else \
        pa.py_buffer(np.packbits(tree.valid[0], bitorder="little"))
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets),
                                                  pa.py_buffer(payload)], values.null_count)
