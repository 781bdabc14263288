"""Avro schema text -> fastavro's parsed schema, with named types from references: shared by
the record serde (avro.py) and the column codecs (avro_arrow.py)."""
from __future__ import annotations

import json

import fastavro

from .errors import SerializationError


def parse_avro(text: str, named: dict | None = None):
    """fastavro's parsed schema; named collects named types for references."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = text                       # a bare primitive name such as string
    try:
        return fastavro.parse_schema(obj, named_schemas=named if named is not None else {})
    except Exception as e:
        raise SerializationError(f"invalid Avro schema: {e}") from e


def resolve_references(registry, references, named: dict, seen=None) -> None:
    """Parse every referenced schema (depth first) into named, so a schema naming a type
    defined in another subject parses."""
    seen = set() if seen is None else seen
    for ref in references or ():
        key = (ref.subject, ref.version)
        if key in seen:
            continue
        seen.add(key)
        reg = registry.get_version(ref.subject, ref.version)
        resolve_references(registry, reg.schema.references, named, seen)
        parse_avro(reg.schema.schema_str, named)
