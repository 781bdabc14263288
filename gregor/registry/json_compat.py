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
- properties, items, additionalProperties schemas compared recursively;
- combined schemas (with Confluent's names): SUM_TYPE_NARROWED (a oneOf /
  anyOf reader with fewer branches), PRODUCT_TYPE_EXTENDED (an allOf reader with more),
  COMBINED_TYPE_SUBSCHEMAS_CHANGED (as many branches, one no longer matching),
  COMBINED_TYPE_CHANGED (another combiner that does not take every writer branch).
  Accepted: a sum extended, a product narrowed, duplicates, another combiner that takes
  every writer branch, a plain writer schema that a branch of a sum reader takes.
Not checked (accepted as they are): a combined writer read by a plain schema, `not`, $ref
targets, patternProperties, dependencies, if/then/else, pattern and format changes.
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
    if _combiner(reader):
        _combined(reader, writer, path, out)
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


_COMBINERS = ("oneOf", "anyOf", "allOf")


def _combiner(node):
    for key in _COMBINERS:
        if isinstance(node, dict) and isinstance(node.get(key), list):
            return key
    return None


def _branches(node, key) -> list:
    """The subschemas, duplicates dropped (Confluent ignores them)."""
    import json
    seen, out = set(), []
    for b in node[key]:
        k = json.dumps(b, sort_keys=True)
        if k not in seen:
            seen.add(k)
            out.append(b)
    return out


def _accepts(reader, writer) -> bool:
    out: list = []
    _walk(reader, writer, "#", out)
    return not out


def _combined(reader, writer, path, out) -> None:
    r_key = _combiner(reader)
    r_br = _branches(reader, r_key)
    w_key = _combiner(writer)
    w_br = _branches(writer, w_key) if w_key else [
        {k: v for k, v in writer.items() if k not in _COMBINERS}]
    if r_key == "allOf":
        # every reader constraint must hold for what the writer wrote
        ok = all(any(_accepts(r, w) for w in w_br) if w_key == "allOf" else
                 all(_accepts(r, w) for w in w_br) for r in r_br)
        if ok:
            return
        if w_key == "allOf":
            kind = "PRODUCT_TYPE_EXTENDED" if len(r_br) > len(w_br) else \
                "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
        else:
            kind = "COMBINED_TYPE_CHANGED" if w_key else "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
        out.append(Difference(kind, path))
        return
    # oneOf / anyOf reader: every writer branch must be taken by some reader branch
    if all(any(_accepts(r, w) for r in r_br) for w in w_br):
        return
    if w_key is None or w_key == r_key:
        kind = "SUM_TYPE_NARROWED" if len(r_br) < len(w_br) else \
            "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
    else:
        kind = "COMBINED_TYPE_CHANGED"
    out.append(Difference(kind, path))


def check_json(reader, writer, reader_label="new", writer_label="old") -> list:
    out: list = []
    _walk(reader.node, writer.node, "#", out)
    return out
