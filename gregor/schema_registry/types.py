"""The registry's values, shaped as confluent-kafka's (Schema, SchemaReference,
RegisteredSchema) so serializers accept either client."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SchemaReference:
    name: str
    subject: str
    version: int

    def to_dict(self) -> dict:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Schema:
    """A schema's text, its type (AVRO, JSON, PROTOBUF) and references."""
    schema_str: str
    schema_type: str = "AVRO"
    references: tuple = field(default_factory=tuple)

    def __post_init__(self):
        object.__setattr__(self, "references", tuple(self.references or ()))

    def to_dict(self) -> dict:
        return {"schema": self.schema_str, "schemaType": self.schema_type,
                "references": [r.to_dict() for r in self.references]}

    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        refs = tuple(SchemaReference(r["name"], r["subject"], int(r["version"]))
                     for r in d.get("references") or ())
        return cls(d["schema"], d.get("schemaType") or "AVRO", refs)


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered under a subject: its global id and the subject's version."""
    schema_id: int
    schema: Schema
    subject: str
    version: int

    @classmethod
    def from_dict(cls, d: dict, subject: str | None = None) -> "RegisteredSchema":
        return cls(int(d["id"]), Schema.from_dict(d), d.get("subject", subject),
                   int(d.get("version", 0)))
