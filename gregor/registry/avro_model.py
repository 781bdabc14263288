"""The resolved Avro type graph: what the compatibility checker walks.

Named types are single objects shared by every place that names them (a recursive record
points at itself), so a walk needs a set of pairs in progress to stop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


@dataclass(eq=False)
class Primitive:
    name: str
    props: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.name

    def describe(self) -> str:
        return self.name


@dataclass(eq=False)
class Field:
    name: str
    type: object
    has_default: bool
    default: object
    aliases: list
    position: int


@dataclass(eq=False)
class RecordType:
    fullname: str
    aliases: list
    fields: list
    is_error: bool = False
    kind = "record"

    def describe(self) -> str:
        return self.fullname


@dataclass(eq=False)
class EnumType:
    fullname: str
    aliases: list
    symbols: list
    default: str | None = None
    kind = "enum"

    def describe(self) -> str:
        return self.fullname


@dataclass(eq=False)
class FixedType:
    fullname: str
    aliases: list
    size: int
    props: dict = field(default_factory=dict)
    kind = "fixed"

    def describe(self) -> str:
        return self.fullname


@dataclass(eq=False)
class ArrayType:
    items: object
    kind = "array"

    def describe(self) -> str:
        return "array"


@dataclass(eq=False)
class MapType:
    values: object
    kind = "map"

    def describe(self) -> str:
        return "map"


@dataclass(eq=False)
class UnionType:
    branches: list
    kind = "union"

    def describe(self) -> str:
        return "union"


def decimal_of(t) -> tuple[int, int] | None:
    """(precision, scale) when `t` is a decimal logical type, else None."""
    props = getattr(t, "props", None) or {}
    if props.get("logicalType") != "decimal":
        return None
    return props.get("precision"), props.get("scale", 0)
