"""Avro schemas as Arrow types (what a decoded column is), and Arrow types as Avro schemas
(what a typed table or a Spark struct is written as). Works on fastavro's parsed schemas:
named types appear once in full, then by their full name."""
from __future__ import annotations

import pyarrow as pa

from .errors import SerializationError

_PRIMITIVE = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
              "float": pa.float32(), "double": pa.float64(), "string": pa.string(),
              "bytes": pa.binary()}
_LOGICAL = {("int", "date"): pa.date32(), ("int", "time-millis"): pa.time32("ms"),
            ("long", "time-micros"): pa.time64("us"),
            ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
            ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
            ("long", "local-timestamp-millis"): pa.timestamp("ms"),
            ("long", "local-timestamp-micros"): pa.timestamp("us"),
            ("string", "uuid"): pa.string()}


def named_types(parsed) -> dict:
    return parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}


def nullable_branch(union: list):
    """(index of null, the other branch) for ["null", T] / [T, "null"]; None otherwise."""
    if len(union) == 2 and "null" in union:
        i = union.index("null")
        return i, union[1 - i]
    return None


def arrow_type(schema, named: dict | None = None) -> pa.DataType:
    """The Arrow type of values of an Avro schema; SerializationError for unions that are
    not T-or-null (no column type fits them)."""
    named = named if named is not None else named_types(schema)
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        if schema in named:
            return arrow_type(named[schema], named)
        raise SerializationError(f"unknown Avro type {schema!r}")
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return arrow_type(branches[0], named)
        raise SerializationError(f"the Avro union {schema} has no Arrow column type "
                                 "(only a type or null)")
    t = schema["type"]
    logical = schema.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if isinstance(t, str) and (t, logical) in _LOGICAL:
        return _LOGICAL[(t, logical)]
    if t == "record" or t == "error":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"], named),
                                   nullable=_nullable(f["type"])) for f in schema["fields"]])
    if t == "enum":
        return pa.string()
    if t == "fixed":
        return pa.binary(int(schema["size"]))
    if t == "array":
        return pa.list_(arrow_type(schema["items"], named))
    if t == "map":
        return pa.map_(pa.string(), arrow_type(schema["values"], named))
    return arrow_type(t, named)


def _nullable(schema) -> bool:
    return schema == "null" or (isinstance(schema, list) and "null" in schema)


def avro_schema(t: pa.DataType, name: str = "record", namespace: str | None = None,
                nullable: bool = False, _names=None):
    """An Avro schema (JSON-ready) for values of Arrow type t; struct fields become record
    fields, nullable ones ["null", T] with default null (so later readers may drop them)."""
    _names = _names if _names is not None else set()
    if pa.types.is_struct(t):
        rname = name
        while rname in _names:
            rname += "_"
        _names.add(rname)
        fields = []
        for f in t:
            ft = avro_schema(f.type, f.name, None, f.nullable, _names)
            field = {"name": f.name, "type": ft}
            if f.nullable:
                field["default"] = None
            fields.append(field)
        out = {"type": "record", "name": rname, "fields": fields}
        if namespace:
            out["namespace"] = namespace
    elif pa.types.is_boolean(t):
        out = "boolean"
    elif pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or \
            pa.types.is_uint8(t) or pa.types.is_uint16(t):
        out = "int"
    elif pa.types.is_integer(t):
        out = "long"
    elif pa.types.is_float32(t):
        out = "float"
    elif pa.types.is_floating(t):
        out = "double"
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        out = "string"
    elif pa.types.is_fixed_size_binary(t):
        out = {"type": "fixed", "name": f"{name}_fixed", "size": t.byte_width}
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        out = "bytes"
    elif pa.types.is_date32(t):
        out = {"type": "int", "logicalType": "date"}
    elif pa.types.is_timestamp(t):
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        kind = "timestamp" if t.tz else "local-timestamp"
        out = {"type": "long", "logicalType": f"{kind}-{unit}"}
    elif pa.types.is_decimal(t):
        out = {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
               "scale": t.scale}
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        out = {"type": "array", "items": avro_schema(t.value_type, f"{name}_item", None,
                                                     t.value_field.nullable, _names)}
    elif pa.types.is_map(t):
        out = {"type": "map", "values": avro_schema(t.item_type, f"{name}_value", None,
                                                    t.item_field.nullable, _names)}
    else:
        raise SerializationError(f"no Avro type for Arrow {t} (column {name!r})")
    return ["null", out] if nullable else out
