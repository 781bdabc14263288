"""JSON Schema compatibility: can every document valid under `writer` pass `reader`?

The subset of Confluent's JSON Schema rules this checker applies, each with Confluent's
difference name (incompatible ones only; the rest are accepted):
- TYPE_NARROWED / TYPE_CHANGED: the reader allows fewer types (integer counts as a number);
- ENUM_ARRAY_NARROWED / ENUM_ARRAY_ADDED: the reader's enum lacks a writer value, or the
  reader adds an enum the writer did not have;
- REQUIRED_ATTRIBUTE_ADDED: the reader requires a property the writer did not;
- ADDITIONAL_PROPERTIES_REMOVED / ADDITIONAL_PROPERTIES_NARROWED: the reader closes what the
  writer left open;
- PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: the reader declares a property the open writer did
  not (old documents may hold anything under that name);
- PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL: a closed reader drops a writer property;
- MAXIMUM/MINIMUM, MAX/MIN_LENGTH, MAX/MIN_ITEMS, MAX/MIN_PROPERTIES tightened
  (..._DECREASED / ..._INCREASED, _ADDED when the writer had no bound);
- properties, items, additionalProperties schemas compared recursively.
Not checked (accepted as they are): oneOf / anyOf / allOf / not, $ref targets,
patternProperties, dependencies, if/then/else, pattern and format changes.
"""
from __future__ import annotations

_NUMERIC = {"maximum": ("MAXIMUM", -1), "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM", -1),
            "maxLength": ("MAX_LENGTH", -1), "maxItems": ("MAX_ITEMS", -1),
            "maxProperties": ("MAX_PROPERTIES", -1),
            "minimum": ("MINIMUM", 1), "exclusiveMinimum": ("EXCLUSIVE_MINIMUM", 1),
            "minLength": ("MIN_LENGTH", 1), "minItems": ("MIN_ITEMS", 1),
            "minProperties": ("MIN_PROPERTIES", 1)}
_ALL_TYPES = {"null", "boolean", "object", "array", "number", "integer", "string"}


class Difference:
    def __init__(self, kind: str, path: str):
        self.error_type, self.path = kind, path

    def message(self) -> str:
        return (f"Found incompatible change: Difference{{jsonPath='{self.path}', "
                f"type={self.error_type}}}")


def _types(node) -> set[str]:
    if node is True or not isinstance(node, dict):
        return set(_ALL_TYPES)
    t = node.get("type")
    if t is None:
        return set(_ALL_TYPES)
    out = set(t if isinstance(t, list) else [t])
    if "number" in out:
        out.add("integer")
    return out


def _open(node) -> bool:
    if not isinstance(node, dict):
        return node is not False
    return node.get("additionalProperties", True) is not False


def _walk(reader, writer, path: str, out: list) -> None:
    if reader is True or reader == {}:
        return                                   # the reader takes anything
    if writer is False:
        return                                   # the writer wrote nothing
    if reader is False:
        out.append(Difference("TYPE_NARROWED", path))
        return
    if not isinstance(reader, dict):
        return
    writer = writer if isinstance(writer, dict) else {}
    rt, wt = _types(reader), _types(writer)
    if not wt <= rt:
        out.append(Difference("TYPE_NARROWED" if rt & wt else "TYPE_CHANGED", path))
        return
    if "enum" in reader:
        if "enum" not in writer:
            out.append(Difference("ENUM_ARRAY_ADDED", f"{path}/enum"))
        elif not all(v in reader["enum"] for v in writer["enum"]):
            out.append(Difference("ENUM_ARRAY_NARROWED", f"{path}/enum"))
    for key, (name, direction) in _NUMERIC.items():
        r, w = reader.get(key), writer.get(key)
        if not isinstance(r, (int, float)) or isinstance(r, bool):
            continue
        if not isinstance(w, (int, float)) or isinstance(w, bool):
            out.append(Difference(f"{name}_ADDED", f"{path}/{key}"))
        elif (r - w) * direction > 0:
            out.append(Difference(f"{name}_{'INCREASED' if direction > 0 else 'DECREASED'}",
                                  f"{path}/{key}"))
    if "object" in wt:
        _objects(reader, writer, path, out)
    if "array" in wt and "items" in reader and isinstance(reader["items"], (dict, bool)):
        w_items = writer.get("items", True)
        _walk(reader["items"], w_items if isinstance(w_items, (dict, bool)) else True,
              f"{path}/items", out)


def _objects(reader, writer, path, out) -> None:
    r_props, w_props = reader.get("properties") or {}, writer.get("properties") or {}
    w_open, r_open = _open(writer), _open(reader)
    new_required = set(reader.get("required") or []) - set(writer.get("required") or [])
    for name in sorted(new_required):
        out.append(Difference("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required/{name}"))
    for name, r_sub in r_props.items():
        p = f"{path}/properties/{name}"
        if name in w_props:
            _walk(r_sub, w_props[name], p, out)
        elif w_open:
            w_extra = writer.get("additionalProperties", True)
            if w_extra is True:
                out.append(Difference("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p))
            else:
                _walk(r_sub, w_extra, p, out)
    for name, w_sub in w_props.items():
        if name not in r_props:
            r_extra = reader.get("additionalProperties", True)
            if r_extra is False:
                out.append(Difference("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                                      f"{path}/properties/{name}"))
            elif isinstance(r_extra, dict):
                _walk(r_extra, w_sub, f"{path}/properties/{name}", out)
    r_extra, w_extra = reader.get("additionalProperties", True), \
        writer.get("additionalProperties", True)
    if w_open and r_extra is False:
        out.append(Difference("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties"))
    elif w_open and isinstance(r_extra, dict):
        before = len(out)
        _walk(r_extra, w_extra if isinstance(w_extra, (dict, bool)) else True,
              f"{path}/additionalProperties", out)
        if len(out) > before:
            del out[before:]
            out.append(Difference("ADDITIONAL_PROPERTIES_NARROWED",
                                  f"{path}/additionalProperties"))


def check_json(reader, writer, reader_label="new", writer_label="old") -> list:
    out: list = []
    _walk(reader.node, writer.node, "#", out)
    return out
