"""valueFormat=json: Confluent-framed JSON Schema values as Spark structs. The Spark type comes
from the schema (object -> struct in `properties` order, integer -> long, number -> double,
array -> array, ["T", "null"] -> nullable T; anything else as its JSON text); values are
parsed one record at a time (JSON has no columnar decoder)."""
from __future__ import annotations

import json

import pyarrow as pa

from gregor.serde.avro_arrow import RecordDecodeError, _binary_parts
from gregor.serde.framing import HEADER_SIZE

_SCALARS = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(),
            "boolean": pa.bool_()}


def json_arrow_type(schema) -> pa.DataType:
    if not isinstance(schema, dict):
        return pa.string()
    t = schema.get("type")
    if isinstance(t, list):
        others = [x for x in t if x != "null"]
        t = others[0] if len(others) == 1 else None
    if t == "object" and "properties" in schema:
        return pa.struct([pa.field(k, json_arrow_type(v))
                          for k, v in schema["properties"].items()])
    if t == "array" and isinstance(schema.get("items"), dict):
        return pa.list_(json_arrow_type(schema["items"]))
    return _SCALARS.get(t, pa.string())


def _shape(value, t: pa.DataType):
    """value made to fit t: unknown-typed parts as JSON text."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        return {f.name: _shape(value.get(f.name), f.type) for f in t}
    if pa.types.is_list(t):
        return [_shape(v, t.value_type) for v in value]
    if pa.types.is_string(t) and not isinstance(value, str):
        return json.dumps(value)
    return value


class JsonColumnDecoder:
    def __init__(self, schema_str: str, permissive: bool):
        self.type = json_arrow_type(json.loads(schema_str))
        self.permissive = permissive

    def decode(self, values):
        n, offsets, data, nulls = _binary_parts(values)
        buf = data.tobytes()
        rows = []
        for i in range(n):
            if nulls is not None and nulls[i]:
                rows.append(None)
                continue
            s, e = int(offsets[i]), int(offsets[i + 1])
            try:
                if e - s < HEADER_SIZE or buf[s] != 0:
                    raise ValueError("no magic byte: the value is not Confluent-framed")
                rows.append(_shape(json.loads(buf[s + HEADER_SIZE:e]), self.type))
            except (ValueError, TypeError) as ex:
                if not self.permissive:
                    raise RecordDecodeError(i, str(ex)) from None
                rows.append(None)
        return pa.array(rows, self.type), None
