"""Record values (and keys) decoded through the Schema Registry for display, search and export.

A value is Confluent-framed when it starts with the magic byte 0 and a 4-byte schema id; the id
tells the registry schema and its type (AVRO, JSON, PROTOBUF), and gregor's own deserializers
turn the payload into an object, shown as JSON. Anything else (not framed, an id the registry
does not know, a payload that does not decode) is not an error: the caller shows the bytes as
before, with the note this module gives. Blocking (registry HTTP calls): run it on a thread.
The registry client caches schemas by id for its life, so each id costs one request.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid
from dataclasses import dataclass

from ..schema_registry import SchemaNotFoundError


@dataclass
class Decoded:
    schema_id: int | None = None
    schema_type: str | None = None
    value: object = None            # the decoded object (JSON-able)
    text: str | None = None         # the object as one line of JSON
    note: str | None = None         # why it was not decoded (the bytes are shown instead)

    @property
    def ok(self) -> bool:
        return self.text is not None


def _jsonable(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(o)).decode()}
    if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, (decimal.Decimal, uuid.UUID)):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON")


def _plain(o):
    """Avro/JSON results as JSON types only (bytes as {"base64":...}, times as ISO text)."""
    return json.loads(json.dumps(o, default=_jsonable, ensure_ascii=False))


class RecordDecoder:
    """decode(topic, data) -> Decoded for framed bytes, None for bytes that are not framed."""

    def __init__(self, registry):
        from ..serde import AvroDeserializer
        self.registry = registry
        self._avro = AvroDeserializer(registry)
        self._json = None
        self._proto = None

    def _deserializer(self, kind: str):
        if kind == "JSON":
            if self._json is None:
                from ..serde.json_schema import JSONDeserializer
                self._json = JSONDeserializer(schema_registry_client=self.registry)
            return self._json
        if kind == "PROTOBUF":
            if self._proto is None:
                from ..serde.protobuf import ProtobufDeserializer
                self._proto = ProtobufDeserializer(schema_registry_client=self.registry)
            return self._proto
        return self._avro

    def decode(self, topic: str, data) -> Decoded | None:
        if data is None or len(data) < 5 or data[0] != 0:
            return None
        sid = int.from_bytes(bytes(data[1:5]), "big")
        try:
            schema = self.registry.get_schema(sid)
        except SchemaNotFoundError:
            return Decoded(schema_id=sid, note=f"schema id {sid} is not in the registry; "
                                                "shown as bytes")
        except Exception as e:          # registry down or refusing: the page still shows
            return Decoded(schema_id=sid, note=f"the registry did not answer for schema id "
                                               f"{sid} ({e}); shown as bytes")
        kind = (schema.schema_type or "AVRO").upper()
        try:
            obj = self._deserializer(kind).deserialize(topic, bytes(data))
            if kind == "PROTOBUF":
                from google.protobuf.json_format import MessageToDict
                obj = MessageToDict(obj, preserving_proto_field_name=True)
            else:
                obj = _plain(obj)
        except Exception as e:
            return Decoded(schema_id=sid, schema_type=kind,
                           note=f"does not decode with {kind} schema id {sid} ({e}); "
                                "shown as bytes")
        return Decoded(schema_id=sid, schema_type=kind, value=obj,
                       text=json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
