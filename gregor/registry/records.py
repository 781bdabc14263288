"""The `_schemas` topic's records, byte for byte as Confluent's registry writes them.

Keys (compact JSON in a fixed property order; compaction works on these exact bytes):
  {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
  {"keytype":"CONFIG","subject":null,"magic":0}        null subject: the global setting
  {"keytype":"MODE","subject":"s","magic":0}
  {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
  {"keytype":"NOOP","magic":0}
Values: SCHEMA {subject,version,id,schema[,schemaType][,references],deleted};
CONFIG {"compatibilityLevel":..}; MODE {"mode":..}; DELETE_SUBJECT {subject,version} (every
version up to that one is soft-deleted). A null value (tombstone) is a hard delete of that
version, or the removal of that config or mode.
Sans-I/O: bytes in, `Entry` out, and back.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .json_text import dumps

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, NOOP = "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "NOOP"
KEY_TYPES = (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, NOOP)


@dataclass(frozen=True)
class Key:
    keytype: str
    subject: str | None = None
    version: int | None = None

    def encode(self) -> bytes:
        if self.keytype == SCHEMA:
            d = {"keytype": SCHEMA, "subject": self.subject, "version": self.version, "magic": 1}
        elif self.keytype == NOOP:
            d = {"keytype": NOOP, "magic": 0}
        else:
            d = {"keytype": self.keytype, "subject": self.subject, "magic": 0}
        return dumps(d).encode()


@dataclass
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list = field(default_factory=list)
    deleted: bool = False

    def to_json(self) -> dict:
        d = {"subject": self.subject, "version": self.version, "id": self.id,
             "schema": self.schema}
        if self.schema_type != "AVRO":
            d["schemaType"] = self.schema_type
        if self.references:
            d["references"] = [{"name": r["name"], "subject": r["subject"],
                                "version": r["version"]} for r in self.references]
        d["deleted"] = self.deleted
        return d


class RecordFormatError(ValueError):
    """A `_schemas` record this registry cannot read (it is skipped, and logged)."""


def encode_value(value) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, SchemaValue):
        value = value.to_json()
    return dumps(value).encode()


def decode_key(raw: bytes | None) -> Key:
    try:
        d = json.loads(raw)
    except (TypeError, ValueError, UnicodeDecodeError) as e:
        raise RecordFormatError(f"key is not JSON: {raw[:80]!r}") from e
    if not isinstance(d, dict) or d.get("keytype") not in KEY_TYPES:
        raise RecordFormatError(f"unknown key {raw[:80]!r}")
    kt = d["keytype"]
    subject = d.get("subject")
    if kt in (SCHEMA, DELETE_SUBJECT) and not isinstance(subject, str):
        raise RecordFormatError(f"{kt} key without a subject: {raw[:80]!r}")
    version = d.get("version")
    if kt == SCHEMA and (not isinstance(version, int) or isinstance(version, bool)):
        raise RecordFormatError(f"SCHEMA key without a version: {raw[:80]!r}")
    return Key(kt, subject if isinstance(subject, str) else None,
               version if kt == SCHEMA else None)


def decode_value(key: Key, raw: bytes | None):
    """The value for `key`: a SchemaValue, a dict (config, mode, delete-subject) or None."""
    if raw is None:
        return None
    try:
        d = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordFormatError(f"value of {key} is not JSON") from e
    if not isinstance(d, dict):
        raise RecordFormatError(f"value of {key} is not a JSON object")
    if key.keytype == SCHEMA:
        try:
            return SchemaValue(subject=d.get("subject", key.subject),
                               version=int(d.get("version", key.version)), id=int(d["id"]),
                               schema=str(d["schema"]),
                               schema_type=d.get("schemaType") or "AVRO",
                               references=list(d.get("references") or []),
                               deleted=bool(d.get("deleted", False)))
        except (KeyError, TypeError, ValueError) as e:
            raise RecordFormatError(f"SCHEMA value of {key} lacks {e}") from e
    return d


def schema_record(v: SchemaValue) -> tuple[bytes, bytes]:
    return Key(SCHEMA, v.subject, v.version).encode(), encode_value(v)


def config_record(subject: str | None, level: dict | None) -> tuple[bytes, bytes | None]:
    return Key(CONFIG, subject).encode(), encode_value(level)


def mode_record(subject: str | None, mode: str | None) -> tuple[bytes, bytes | None]:
    return Key(MODE, subject).encode(), encode_value(None if mode is None else {"mode": mode})


def delete_subject_record(subject: str, version: int) -> tuple[bytes, bytes]:
    return (Key(DELETE_SUBJECT, subject).encode(),
            encode_value({"subject": subject, "version": version}))


def noop_record() -> tuple[bytes, None]:
    return Key(NOOP).encode(), None
