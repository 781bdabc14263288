"""Avro schema resolution as a compatibility check: can `reader` read what `writer` wrote?

The rules are the Avro specification's "Schema Resolution", checked the way Avro-Java's
SchemaCompatibility (which Confluent's registry uses) checks them:
- records, enums and fixed match by unqualified name or by a reader alias of the writer's
  full name; fixed also by size;
- a reader field missing from the writer needs a default (or be an enum with a default
  symbol); writer-only fields are skipped; fields match by name or by reader field alias;
- promotions: int -> long, float, double; long -> float, double; float -> double;
  string <-> bytes;
- enums: every writer symbol in the reader, unless the reader has a default symbol;
- unions: every writer branch readable by the reader; a non-union writer needs one reader
  branch that reads it;
- decimals (the spec, beyond Avro-Java): precision and scale must be equal.
Each incompatibility keeps Avro-Java's error type and a location path like `/fields/1/type`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .avro_model import decimal_of

_PROMOTIONS = {"long": {"int"}, "float": {"int", "long"}, "double": {"int", "long", "float"},
               "bytes": {"string"}, "string": {"bytes"}}


@dataclass(frozen=True)
class Incompatibility:
    error_type: str
    path: str
    description: str
    info: str

    def message(self) -> str:
        return (f"{{errorType:'{self.error_type}', description:'{self.description}', "
                f"additionalInfo:'{self.info}'}}")


class _Checker:
    def __init__(self, reader_label: str, writer_label: str):
        self.r, self.w = reader_label, writer_label
        self.in_progress: set[tuple[int, int]] = set()

    def check(self, reader, writer, path: list[str]) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        if key in self.in_progress:        # a recursive type already being compared
            return []
        self.in_progress.add(key)
        try:
            return self._check(reader, writer, path)
        finally:
            self.in_progress.discard(key)

    def _loc(self, path):
        return "/" + "/".join(path) if path else "/"

    def _mismatch(self, reader, writer, path):
        return [Incompatibility(
            "TYPE_MISMATCH", self._loc(path),
            f"The type (path '{self._loc(path)}') of a field in the {self.r} schema does not "
            f"match with the {self.w} schema",
            f"reader type: {reader.kind.upper()} not compatible with writer type: "
            f"{writer.kind.upper()}")]

    def _check(self, reader, writer, path):
        rk, wk = reader.kind, writer.kind
        if rk == wk:
            if rk == "union":
                out = []
                for i, branch in enumerate(writer.branches):
                    if self.check(reader, branch, [*path, str(i)]):
                        loc = self._loc([*path, str(i)])
                        out.append(Incompatibility(
                            "MISSING_UNION_BRANCH", loc,
                            f"The {self.r} schema is missing a type inside a union field at "
                            f"path '{loc}' in the {self.w} schema",
                            f"reader union lacking writer type: {branch.kind.upper()}"))
                return out
            if rk == "record":
                return self._names(reader, writer, path) + self._fields(reader, writer, path)
            if rk == "enum":
                return self._names(reader, writer, path) + self._symbols(reader, writer, path)
            if rk == "fixed":
                out = self._names(reader, writer, path)
                if reader.size != writer.size:
                    loc = self._loc([*path, "size"])
                    out.append(Incompatibility(
                        "FIXED_SIZE_MISMATCH", loc,
                        f"The size of FIXED type field at path '{loc}' in the {self.r} schema "
                        f"does not match with the {self.w} schema",
                        f"expected: {writer.size}, found: {reader.size}"))
                return out + self._decimal(reader, writer, path)
            if rk == "array":
                return self.check(reader.items, writer.items, [*path, "items"])
            if rk == "map":
                return self.check(reader.values, writer.values, [*path, "values"])
            return self._decimal(reader, writer, path)
        if wk == "union":
            out = []
            for branch in writer.branches:
                out += self.check(reader, branch, path)
            return out
        if rk == "union":
            for branch in reader.branches:
                if not self.check(branch, writer, path):
                    return []
            loc = self._loc(path)
            return [Incompatibility(
                "MISSING_UNION_BRANCH", loc,
                f"The {self.r} schema is missing a type inside a union field at path '{loc}' "
                f"in the {self.w} schema",
                f"reader union lacking writer type: {wk.upper()}")]
        if wk in _PROMOTIONS.get(rk, ()):
            return []
        return self._mismatch(reader, writer, path)

    def _decimal(self, reader, writer, path):
        rd, wd = decimal_of(reader), decimal_of(writer)
        if rd is None or wd is None or rd == wd:
            return []
        return [Incompatibility(
            "TYPE_MISMATCH", self._loc(path),
            f"The type (path '{self._loc(path)}') of a field in the {self.r} schema does not "
            f"match with the {self.w} schema",
            f"reader decimal(precision={rd[0]}, scale={rd[1]}) not compatible with writer "
            f"decimal(precision={wd[0]}, scale={wd[1]})")]

    def _names(self, reader, writer, path):
        short = reader.fullname.rpartition(".")[2]
        if short == writer.fullname.rpartition(".")[2] or writer.fullname in reader.aliases:
            return []
        loc = self._loc([*path, "name"])
        return [Incompatibility(
            "NAME_MISMATCH", loc,
            f"The name of the schema has changed (path '{loc}')",
            f"expected: {writer.fullname}")]

    def _fields(self, reader, writer, path):
        by_name = {f.name: f for f in writer.fields}
        out = []
        for rf in reader.fields:
            wf = by_name.get(rf.name)
            if wf is None:
                wf = next((by_name[a] for a in rf.aliases if a in by_name), None)
            fpath = [*path, "fields", str(rf.position)]
            if wf is None:
                enum_default = rf.type.kind == "enum" and rf.type.default is not None
                if not rf.has_default and not enum_default:
                    loc = self._loc(fpath)
                    out.append(Incompatibility(
                        "READER_FIELD_MISSING_DEFAULT_VALUE", loc,
                        f"The field '{rf.name}' at path '{loc}' in the {self.r} schema has no "
                        f"default value and is missing in the {self.w} schema", rf.name))
                continue
            out += self.check(rf.type, wf.type, [*fpath, "type"])
        return out

    def _symbols(self, reader, writer, path):
        missing = sorted(set(writer.symbols) - set(reader.symbols))
        if not missing or (reader.default is not None and reader.default in reader.symbols):
            return []
        loc = self._loc([*path, "symbols"])
        return [Incompatibility(
            "MISSING_ENUM_SYMBOLS", loc,
            f"The {self.r} schema is missing enum symbols '{', '.join(missing)}' at path "
            f"'{loc}' in the {self.w} schema", f"[{', '.join(missing)}]")]


def check_avro(reader, writer, reader_label: str = "new", writer_label: str = "old"):
    """Every reason `reader` (an AvroSchema) cannot read `writer`'s data; [] if it can."""
    return _Checker(reader_label, writer_label).check(reader.model, writer.model, [])
