"""Avro schemas as Confluent's registry keeps them.

`parse_avro(text, references)` checks the schema with fastavro's parser (types, defaults,
enums, unions) plus the name rules fastavro leaves out, and returns an `AvroSchema` with:
- `canonical`: the text Confluent stores and serves, Avro-Java's `Schema.toString()`: compact
  JSON, attributes in Avro-Java's order (type, name, namespace, doc, fields|symbols|size|items|
  values, then other properties, then aliases), `"string"` for a bare `{"type":"string"}`, a
  namespace only where it differs from the enclosing one, named types defined once and
  referred to by name afterwards (referenced schemas' types are always referred to by name);
- `normalized`: the text `normalize=true` registers: the canonical form with every name fully
  qualified and no `namespace` attributes, so schemas that differ only in how they spell
  namespaces, in attribute order or in whitespace normalize alike;
- `model`: the resolved type graph (`avro_model`) the compatibility checker walks.
"""
from __future__ import annotations

import json
import re

from fastavro.schema import parse_schema

from .avro_model import (PRIMITIVES, ArrayType, EnumType, Field, FixedType, MapType,
                         Primitive, RecordType, UnionType)
from .json_text import dumps

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RECORD_KEYS = {"type", "name", "namespace", "doc", "fields", "aliases"}
_FIELD_KEYS = {"name", "type", "doc", "default", "order", "aliases"}
_ENUM_KEYS = {"type", "name", "namespace", "doc", "symbols", "default", "aliases"}
_FIXED_KEYS = {"type", "name", "namespace", "doc", "size", "aliases"}


class AvroSchemaError(ValueError):
    """The text is not a valid Avro schema; the message says where."""


class AvroSchema:
    schema_type = "AVRO"

    def __init__(self, canonical: str, normalized: str, model, named: dict,
                 dependencies: list[str]):
        self.canonical = canonical
        self.normalized = normalized
        self.model = model
        self.named = named            # fullname -> model of every named type it can see
        self.dependencies = dependencies   # referenced canonical texts, dependencies first

    def __repr__(self) -> str:
        return f"AvroSchema({self.canonical})"


def _full_name(name: str, namespace: str | None) -> tuple[str, str | None]:
    """(fullname, namespace) of `name` written inside `namespace`."""
    if "." in name:
        return name, name.rpartition(".")[0]
    return (f"{namespace}.{name}" if namespace else name), (namespace or None)


def _check_name(full: str, where: str) -> None:
    for part in full.split("."):
        if not _NAME.match(part):
            raise AvroSchemaError(f"invalid name {full!r} at {where}: each part must match "
                                  "[A-Za-z_][A-Za-z0-9_]*")


class _Builder:
    """One pass over the JSON: the model and both printed forms, as Avro-Java prints them."""

    def __init__(self, named: dict, printed: set[str]):
        self.named = named            # fullname -> model (references included)
        self.printed = printed        # fullnames already written out in full

    def build(self, node, ns: str | None, path: str, qualify: bool):
        if isinstance(node, str):
            return self._name_ref(node, ns, path, qualify)
        if isinstance(node, list):
            branches, texts = [], []
            for i, b in enumerate(node):
                m, t = self.build(b, ns, f"{path}[{i}]", qualify)
                branches.append(m)
                texts.append(t)
            return UnionType(branches), texts
        if not isinstance(node, dict):
            raise AvroSchemaError(f"{path}: expected a type name, an object or a union, got "
                                  f"{dumps(node)}")
        t = node.get("type")
        if isinstance(t, (dict, list)):
            # {"type": {...}}: a wrapper Avro-Java reduces to the inner type
            return self.build(t, ns, f"{path}/type", qualify)
        if t in ("record", "error"):
            return self._record(node, ns, path, qualify)
        if t == "enum":
            return self._enum(node, ns, path, qualify)
        if t == "fixed":
            return self._fixed(node, ns, path, qualify)
        if t == "array":
            items, text = self.build(node.get("items"), ns, f"{path}/items", qualify)
            return ArrayType(items), {"type": "array", "items": text, **_props(node, {"type",
                                                                                     "items"})}
        if t == "map":
            values, text = self.build(node.get("values"), ns, f"{path}/values", qualify)
            return MapType(values), {"type": "map", "values": text, **_props(node, {"type",
                                                                                   "values"})}
        if t in PRIMITIVES:
            props = _props(node, {"type"})
            return Primitive(t, props), ({"type": t, **props} if props else t)
        if isinstance(t, str):
            props = _props(node, {"type"})
            model, text = self._name_ref(t, ns, path, qualify)
            return model, text
        raise AvroSchemaError(f"{path}: no type in {dumps(node)[:200]}")

    def _name_ref(self, name: str, ns, path, qualify):
        if name in PRIMITIVES:
            return Primitive(name, {}), name
        full, _ = _full_name(name, ns)
        if full not in self.named and name in self.named:
            full = name                   # a name of the null namespace
        model = self.named.get(full)
        if model is None:
            raise AvroSchemaError(f"{path}: unknown type {name!r}"
                                  + (f" (looked for {full!r})" if full != name else ""))
        if full in self.printed:
            if qualify:
                return model, full
            space = full.rpartition(".")[0] or None
            return model, (full.rpartition(".")[2] if space == ns else full)
        raise AvroSchemaError(f"{path}: type {name!r} is used inside its own definition "
                              "before it is complete")

    def _define(self, node, ns, path, qualify, kind_keys):
        name = node.get("name")
        if not isinstance(name, str) or not name:
            raise AvroSchemaError(f"{path}: a {node.get('type')} needs a name")
        space_attr = node.get("namespace")
        if space_attr is not None and not isinstance(space_attr, str):
            raise AvroSchemaError(f"{path}: namespace must be a string")
        space = space_attr if space_attr is not None and "." not in name else ns
        full, space = _full_name(name, space or None)
        _check_name(full, path)
        if full in self.named:
            raise AvroSchemaError(f"{path}: type {full!r} is defined twice")
        aliases = node.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise AvroSchemaError(f"{path}: aliases must be a list of names")
        full_aliases = [_full_name(a, space)[0] for a in aliases]
        head = {"type": node["type"]}
        if qualify:
            head["name"] = full
        else:
            head["name"] = full.rpartition(".")[2]
            if space is not None and space != ns:
                head["namespace"] = space
            elif space is None and ns is not None:
                head["namespace"] = ""
        if isinstance(node.get("doc"), str):
            head["doc"] = node["doc"]
        tail_aliases = ([a if qualify else _qualified(a, space) for a in full_aliases]
                        if full_aliases else None)
        return full, space, full_aliases, head, tail_aliases

    def _record(self, node, ns, path, qualify):
        full, space, aliases, head, tail_aliases = self._define(node, ns, path, qualify,
                                                                _RECORD_KEYS)
        model = RecordType(full, aliases, [], node["type"] == "error")
        self.named[full] = model
        self.printed.add(full)
        fields_json = node.get("fields")
        if not isinstance(fields_json, list):
            raise AvroSchemaError(f"{path}: record {full!r} needs a list of fields")
        fields_text, seen = [], set()
        for i, f in enumerate(fields_json):
            fpath = f"{path}/fields/{i}"
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise AvroSchemaError(f"{fpath}: a field needs a name")
            fname = f["name"]
            if not _NAME.match(fname):
                raise AvroSchemaError(f"{fpath}: invalid field name {fname!r}")
            if fname in seen:
                raise AvroSchemaError(f"{fpath}: field {fname!r} appears twice in {full!r}")
            seen.add(fname)
            if "type" not in f:
                raise AvroSchemaError(f"{fpath}: field {fname!r} has no type")
            ftype, ftext = self.build(f["type"], space, f"{fpath}/type", qualify)
            text = {"name": fname, "type": ftext}
            if isinstance(f.get("doc"), str):
                text["doc"] = f["doc"]
            if "default" in f:
                text["default"] = f["default"]
            order = f.get("order", "ascending")
            if order not in ("ascending", "descending", "ignore"):
                raise AvroSchemaError(f"{fpath}: order must be ascending, descending or ignore")
            if order != "ascending":
                text["order"] = order
            faliases = f.get("aliases") or []
            if faliases:
                text["aliases"] = list(faliases)
            text.update(_props(f, _FIELD_KEYS))
            model.fields.append(Field(fname, ftype, "default" in f, f.get("default"),
                                      list(faliases), i))
            fields_text.append(text)
        text = {**head, "fields": fields_text, **_props(node, _RECORD_KEYS)}
        if tail_aliases:
            text["aliases"] = tail_aliases
        return model, text

    def _enum(self, node, ns, path, qualify):
        full, space, aliases, head, tail_aliases = self._define(node, ns, path, qualify,
                                                                _ENUM_KEYS)
        symbols = node.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise AvroSchemaError(f"{path}: enum {full!r} needs a list of symbols")
        for s in symbols:
            if not _NAME.match(s):
                raise AvroSchemaError(f"{path}: invalid enum symbol {s!r} in {full!r}")
        default = node.get("default")
        model = EnumType(full, aliases, list(symbols), default)
        self.named[full] = model
        self.printed.add(full)
        text = {**head, "symbols": list(symbols)}
        if default is not None:
            text["default"] = default
        text.update(_props(node, _ENUM_KEYS))
        if tail_aliases:
            text["aliases"] = tail_aliases
        return model, text

    def _fixed(self, node, ns, path, qualify):
        full, space, aliases, head, tail_aliases = self._define(node, ns, path, qualify,
                                                                _FIXED_KEYS)
        size = node.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise AvroSchemaError(f"{path}: fixed {full!r} needs a size >= 0")
        props = _props(node, _FIXED_KEYS)
        model = FixedType(full, aliases, size, props)
        self.named[full] = model
        self.printed.add(full)
        text = {**head, "size": size, **props}
        if tail_aliases:
            text["aliases"] = tail_aliases
        return model, text


def _qualified(full: str, space: str | None) -> str:
    """Avro-Java's Name.getQualified(space): the short name inside its own namespace."""
    own = full.rpartition(".")[0] or None
    return full.rpartition(".")[2] if own == space else full


def _props(node: dict, reserved: set[str]) -> dict:
    return {k: v for k, v in node.items() if k not in reserved}


def _load(text: str):
    try:
        return json.loads(text)
    except ValueError:
        # Avro-Java also takes a bare primitive or name without quotes
        if _NAME.match(text.strip()) or text.strip() in PRIMITIVES:
            return text.strip()
        raise AvroSchemaError(f"schema is not JSON: {text[:200]!r}") from None


def parse_avro(text: str, references: list["AvroSchema"] = ()) -> AvroSchema:
    """Check and canonicalize `text`; `references` are the referenced schemas, parsed."""
    node = _load(text)
    dependencies: list[str] = []
    for ref in references:
        for dep in [*ref.dependencies, ref.canonical]:
            if dep not in dependencies:
                dependencies.append(dep)
    fastavro_named: dict = {}
    try:
        for dep in dependencies:
            parse_schema(json.loads(dep), named_schemas=fastavro_named, _write_hint=False)
        parse_schema(node, named_schemas=fastavro_named, _write_hint=False)
    except AvroSchemaError:
        raise
    except Exception as e:   # fastavro raises SchemaParseException, UnknownType, ValueError...
        raise AvroSchemaError(f"{type(e).__name__}: {e}") from e
    known = {}
    for ref in references:
        known.update(ref.named)
    named = dict(known)
    model, canonical = _Builder(named, set(known)).build(node, None, "", False)
    _, normalized = _Builder(dict(known), set(known)).build(node, None, "", True)
    return AvroSchema(dumps(canonical), dumps(normalized), model, named, dependencies)
