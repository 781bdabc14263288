"""JSON Schema compatibility: can every document valid under `writer` pass `reader`?

The subset of Confluent's JSON Schema rules this checker applies, each with Confluent's
difference name (incompatible ones only; the rest are accepted):
- TYPE_NARROWED / TYPE_CHANGED: the reader allows fewer types (integer counts as a number);
- ENUM_ARRAY_NARROWED / ENUM_ARRAY_ADDED: the reader's enum lacks a writer value, or the
  reader adds an enum the writer did not have;
- REQUIRED_ATTRIBUTE_ADDED: the reader requires a property the writer did not;
- ADDITIONAL_PROPERTIES_REMOVED / ADDITIONAL_PROPERTIES_NARROWED: the reader closes what the
  writer left open;
- PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: the reader declares a property (or a pattern) the
  fully open writer did not (old documents may hold anything under that name);
- PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL: a closed reader drops a writer property;
- PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL /
  PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: with patternProperties or
  an additionalProperties schema, a property added that what the writer applied to its name
  does not fit, or a property dropped that what the reader now applies does not take;
- NOT_TYPE_EXTENDED: the reader's `not` excludes something the writer's did not (compared
  in reverse; a `not` added counts too);
- DEPENDENCY_ARRAY_ADDED / _EXTENDED / _CHANGED, DEPENDENCY_SCHEMA_ADDED (`dependencies`,
  `dependentRequired`, `dependentSchemas`); dependency schemas in both compared;
- local `$ref`s (`#/definitions/..`, `#/$defs/..`, any `#/` pointer) resolved in each
  schema's own document and their targets compared; a pair of refs already being compared
  is taken as compatible, so recursive types terminate;
- MAXIMUM/MINIMUM, MAX/MIN_LENGTH, MAX/MIN_ITEMS, MAX/MIN_PROPERTIES tightened
  (..._DECREASED / ..._INCREASED, _ADDED when the writer had no bound);
- PATTERN_ADDED / PATTERN_CHANGED (two regexes are not compared for containment, so any
  change counts), MULTIPLE_OF_ADDED, MULTIPLE_OF_EXPANDED (the new divisor a multiple of the
  old), MULTIPLE_OF_CHANGED (neither divides the other), UNIQUE_ITEMS_ADDED; accepted:
  pattern / multipleOf / uniqueItems removed, MULTIPLE_OF_REDUCED (the new divisor divides
  the old; divisibility is exact, fractional divisors included);
- tuple arrays (`items` list + `additionalItems`, or `prefixItems` + `items`), item by
  position: ITEM_ADDED_TO_OPEN_CONTENT_MODEL, ITEM_ADDED_ / ITEM_REMOVED_NOT_COVERED_BY_
  PARTIALLY_OPEN_CONTENT_MODEL, ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL,
  ADDITIONAL_ITEMS_REMOVED / ADDITIONAL_ITEMS_NARROWED; accepted: an item added to a closed
  model or removed from an open one, an empty-schema item added, a false item removed,
  additional items opened;
- properties, items, additionalProperties schemas compared recursively;
- combined schemas (with Confluent's names): SUM_TYPE_NARROWED (a oneOf /
  anyOf reader with fewer branches), PRODUCT_TYPE_EXTENDED (an allOf reader with more),
  COMBINED_TYPE_SUBSCHEMAS_CHANGED (as many branches, one no longer matching),
  COMBINED_TYPE_CHANGED (another combiner that does not take every writer branch).
  Accepted: a sum extended, a product narrowed, duplicates, another combiner that takes
  every writer branch, a plain writer schema that a branch of a sum reader takes.
Not checked (accepted as they are): a combined writer read by a plain schema, remote
(non-`#`) $refs, if/then/else and format (Confluent compares neither), contains /
minContains / maxContains, unevaluatedItems / unevaluatedProperties.
"""
from __future__ import annotations

import json
import re

_NUMERIC = {"maximum": ("MAXIMUM", -1), "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM", -1),
            "maxLength": ("MAX_LENGTH", -1), "maxItems": ("MAX_ITEMS", -1),
            "maxProperties": ("MAX_PROPERTIES", -1),
            "minimum": ("MINIMUM", 1), "exclusiveMinimum": ("EXCLUSIVE_MINIMUM", 1),
            "minLength": ("MIN_LENGTH", 1), "minItems": ("MIN_ITEMS", 1),
            "minProperties": ("MIN_PROPERTIES", 1)}
_NOT_COVERED = "NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
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


class _Ctx:
    """The two root documents (for local $ref) and the $ref pairs under comparison."""

    def __init__(self, reader_root, writer_root):
        self.roots = (reader_root, writer_root)
        self.active: set = set()

    def swapped(self) -> "_Ctx":
        """For `not`, where the writer's subschema is the one that reads."""
        other = _Ctx(self.roots[1], self.roots[0])
        other.active = self.active
        return other


def _pointer(root, ref: str):
    """The target of a local reference `#/a/b` (JSON Pointer escapes undone), or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _deref(node, root, depth=0):
    """Follow local $refs (a chain of them too); the ref string followed last, or None."""
    last = None
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 64:
        target = _pointer(root, node["$ref"])
        if target is None:
            break                                # not local: compared as written
        last, node, depth = node["$ref"], target, depth + 1
    return node, last


def _walk(reader, writer, path: str, out: list, ctx: _Ctx) -> None:
    reader, r_ref = _deref(reader, ctx.roots[0])
    writer, w_ref = _deref(writer, ctx.roots[1])
    if r_ref or w_ref:
        key = (r_ref, w_ref, id(reader), id(writer))
        if key in ctx.active:
            return                               # a recursive type: assumed to hold
        ctx.active.add(key)
        try:
            _walk_node(reader, writer, path, out, ctx)
        finally:
            ctx.active.discard(key)
        return
    _walk_node(reader, writer, path, out, ctx)


def _walk_node(reader, writer, path: str, out: list, ctx: _Ctx) -> None:
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
        _combined(reader, writer, path, out, ctx)
    if "not" in reader:
        _not(reader["not"], writer.get("not"), f"{path}/not", out, ctx)
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
    _string_number(reader, writer, path, out)
    if "object" in wt:
        _objects(reader, writer, path, out, ctx)
        _dependencies(reader, writer, path, out, ctx)
    if "array" in wt and (_tuple(reader)[0] is not None or _tuple(writer)[0] is not None):
        _tuples(reader, writer, path, out, ctx)
    elif "array" in wt and "items" in reader and isinstance(reader["items"], (dict, bool)):
        w_items = writer.get("items", True)
        _walk(reader["items"], w_items if isinstance(w_items, (dict, bool)) else True,
              f"{path}/items", out, ctx)


def _multiple(r, w) -> bool:
    """Is every multiple of w a multiple of r (w an integer multiple of r)?"""
    q = w / r
    return abs(q - round(q)) < 1e-9


def _string_number(reader, writer, path, out) -> None:
    """pattern, multipleOf, uniqueItems: a constraint the reader adds or makes stricter."""
    r, w = reader.get("pattern"), writer.get("pattern")
    if isinstance(r, str):
        if not isinstance(w, str):
            out.append(Difference("PATTERN_ADDED", f"{path}/pattern"))
        elif r != w:                             # regex containment is not decided
            out.append(Difference("PATTERN_CHANGED", f"{path}/pattern"))
    r, w = reader.get("multipleOf"), writer.get("multipleOf")
    if _num(r) and r > 0:
        if not (_num(w) and w > 0):
            out.append(Difference("MULTIPLE_OF_ADDED", f"{path}/multipleOf"))
        elif r != w and _multiple(w, r):
            out.append(Difference("MULTIPLE_OF_EXPANDED", f"{path}/multipleOf"))
        elif r != w and not _multiple(r, w):
            out.append(Difference("MULTIPLE_OF_CHANGED", f"{path}/multipleOf"))
    if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
        out.append(Difference("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems"))


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tuple(node):
    """(positional item schemas or None, the schema for the items after them): draft 4-2019
    `items` list + `additionalItems`, or 2020-12 `prefixItems` + `items`."""
    if not isinstance(node, dict):
        return None, True
    if isinstance(node.get("prefixItems"), list):
        return node["prefixItems"], node.get("items", True)
    if isinstance(node.get("items"), list):
        return node["items"], node.get("additionalItems", True)
    return None, node.get("items", True)


def _tuples(reader, writer, path, out, ctx) -> None:
    """Tuple arrays, as content models of positions: item i of the writer is read by item i
    of the reader, or by the reader's rest schema; a reader item the writer never declared
    must take what the writer's rest schema allowed there."""
    r_items, r_rest = _tuple(reader)
    w_items, w_rest = _tuple(writer)
    r_items, w_items = r_items or [], w_items or []
    key = "prefixItems" if "prefixItems" in reader else "items"
    for i in range(max(len(r_items), len(w_items))):
        p = f"{path}/{key}/{i}"
        if i < len(r_items) and i < len(w_items):
            _walk(r_items[i], w_items[i], p, out, ctx)
        elif i < len(r_items):                   # an item added by the reader
            if w_rest is False or r_items[i] is True or r_items[i] == {}:
                continue                         # the writer wrote nothing there
            if w_rest is True or w_rest == {}:
                out.append(Difference("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", p))
            elif not _accepts(r_items[i], w_rest, ctx):
                out.append(Difference(f"ITEM_ADDED_{_NOT_COVERED}", p))
        else:                                    # a writer item the reader dropped
            if r_rest is True or r_rest == {} or w_items[i] is False:
                continue                         # a false item: nothing written there
            if r_rest is False:
                out.append(Difference("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", p))
            elif not _accepts(r_rest, w_items[i], ctx):
                out.append(Difference(f"ITEM_REMOVED_{_NOT_COVERED}", p))
    rest = f"{path}/{'items' if key == 'prefixItems' else 'additionalItems'}"
    if r_rest is False and w_rest is not False:
        out.append(Difference("ADDITIONAL_ITEMS_REMOVED", rest))
    elif isinstance(r_rest, dict) and r_rest != {} and (w_rest is True or w_rest == {}):
        out.append(Difference("ADDITIONAL_ITEMS_NARROWED", rest))
    elif isinstance(r_rest, dict) and isinstance(w_rest, dict):
        _walk(r_rest, w_rest, rest, out, ctx)


def _not(r_not, w_not, path, out, ctx) -> None:
    """`not` reverses the direction: the writer's excluded set must cover the reader's."""
    if w_not is None:
        out.append(Difference("NOT_TYPE_EXTENDED", path))   # the reader excludes more
        return
    if not _accepts(w_not, r_not, ctx.swapped()):
        out.append(Difference("NOT_TYPE_EXTENDED", path))
    # otherwise NOT_TYPE_NARROWED or unchanged: accepted


def _dependency_maps(node):
    """(property -> required names, property -> schema) from `dependencies` (draft 4-7)
    and `dependentRequired` / `dependentSchemas` (2019-09 on)."""
    arrays, schemas = {}, {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        for name, dep in (node.get(key) or {}).items():
            if isinstance(dep, list):
                arrays[name] = (key, dep)
            elif isinstance(dep, (dict, bool)):
                schemas[name] = (key, dep)
    return arrays, schemas


def _dependencies(reader, writer, path, out, ctx) -> None:
    r_arr, r_sch = _dependency_maps(reader)
    w_arr, w_sch = _dependency_maps(writer)
    for name, (key, deps) in r_arr.items():
        p = f"{path}/{key}/{name}"
        if name not in w_arr:
            out.append(Difference("DEPENDENCY_ARRAY_ADDED", p))
            continue
        r_set, w_set = set(deps), set(w_arr[name][1])
        if r_set > w_set:
            out.append(Difference("DEPENDENCY_ARRAY_EXTENDED", p))
        elif not r_set <= w_set:
            out.append(Difference("DEPENDENCY_ARRAY_CHANGED", p))
    for name, (key, dep) in r_sch.items():
        p = f"{path}/{key}/{name}"
        if name not in w_sch:
            out.append(Difference("DEPENDENCY_SCHEMA_ADDED", p))
        else:
            _walk(dep, w_sch[name][1], p, out, ctx)


def _coverage(node, name: str) -> list:
    """The schemas `node` applies to a property `name` it does not declare: its matching
    patternProperties, else its additionalProperties (true when absent)."""
    out = [sub for pat, sub in (node.get("patternProperties") or {}).items()
           if _matches(pat, name)]
    return out or [node.get("additionalProperties", True)]


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False                      # a pattern Python's re cannot read matches nothing


def _fully_open(node) -> bool:
    return node.get("additionalProperties", True) is True and not node.get("patternProperties")


def _objects(reader, writer, path, out, ctx) -> None:
    r_props, w_props = reader.get("properties") or {}, writer.get("properties") or {}
    w_open = _open(writer)
    new_required = set(reader.get("required") or []) - set(writer.get("required") or [])
    for name in sorted(new_required):
        out.append(Difference("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required/{name}"))
    for name, r_sub in r_props.items():
        p = f"{path}/properties/{name}"
        if name in w_props:
            _walk(r_sub, w_props[name], p, out, ctx)
            continue
        if r_sub is True or r_sub == {}:
            continue                             # takes whatever old documents held
        w_cover = _coverage(writer, name)
        if w_cover == [False]:
            continue                             # old documents never had it
        if _fully_open(writer):
            out.append(Difference("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p))
        elif not any(_accepts(r_sub, w, ctx) for w in w_cover):
            out.append(Difference("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p))
    for name, w_sub in w_props.items():
        if name in r_props or w_sub is False:
            continue
        p = f"{path}/properties/{name}"
        if _fully_open(reader):
            continue
        r_cover = _coverage(reader, name)
        if r_cover == [False]:
            out.append(Difference("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", p))
        elif not all(_accepts(r, w_sub, ctx) for r in r_cover):
            out.append(Difference(
                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", p))
    _patterns(reader, writer, path, out, ctx)
    r_extra, w_extra = reader.get("additionalProperties", True), \
        writer.get("additionalProperties", True)
    if w_open and r_extra is False:
        out.append(Difference("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties"))
    elif w_open and isinstance(r_extra, dict):
        if not _accepts(r_extra, w_extra if isinstance(w_extra, (dict, bool)) else True, ctx):
            out.append(Difference("ADDITIONAL_PROPERTIES_NARROWED",
                                  f"{path}/additionalProperties"))


def _patterns(reader, writer, path, out, ctx) -> None:
    """patternProperties: a pattern in both is compared; a new reader pattern must take
    what the writer allowed under names it matches (the properties both declare, and
    anything when the writer was fully open)."""
    w_pats = writer.get("patternProperties") or {}
    for pat, r_sub in (reader.get("patternProperties") or {}).items():
        p = f"{path}/patternProperties/{pat}"
        if pat in w_pats:
            _walk(r_sub, w_pats[pat], p, out, ctx)
            continue
        if r_sub is True or r_sub == {}:
            continue
        if _fully_open(writer):
            out.append(Difference("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", p))
            continue
        # the reader applies the pattern to the properties it keeps too (the ones it
        # dropped are judged by their coverage above)
        r_props = reader.get("properties") or {}
        for name, w_sub in (writer.get("properties") or {}).items():
            if name in r_props and _matches(pat, name) and not _accepts(r_sub, w_sub, ctx):
                out.append(Difference("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                      f"{path}/properties/{name}"))


_COMBINERS = ("oneOf", "anyOf", "allOf")


def _combiner(node):
    for key in _COMBINERS:
        if isinstance(node, dict) and isinstance(node.get(key), list):
            return key
    return None


def _branches(node, key) -> list:
    """The subschemas, duplicates dropped (Confluent ignores them)."""
    seen, out = set(), []
    for b in node[key]:
        k = json.dumps(b, sort_keys=True)
        if k not in seen:
            seen.add(k)
            out.append(b)
    return out


def _accepts(reader, writer, ctx) -> bool:
    out: list = []
    _walk(reader, writer, "#", out, ctx)
    return not out


def _combined(reader, writer, path, out, ctx) -> None:
    r_key = _combiner(reader)
    r_br = _branches(reader, r_key)
    w_key = _combiner(writer)
    w_br = _branches(writer, w_key) if w_key else [
        {k: v for k, v in writer.items() if k not in _COMBINERS}]
    if r_key == "allOf":
        # every reader constraint must hold for what the writer wrote
        ok = all(any(_accepts(r, w, ctx) for w in w_br) if w_key == "allOf" else
                 all(_accepts(r, w, ctx) for w in w_br) for r in r_br)
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
    if all(any(_accepts(r, w, ctx) for r in r_br) for w in w_br):
        return
    if w_key is None or w_key == r_key:
        kind = "SUM_TYPE_NARROWED" if len(r_br) < len(w_br) else \
            "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
    else:
        kind = "COMBINED_TYPE_CHANGED"
    out.append(Difference(kind, path))


def check_json(reader, writer, reader_label="new", writer_label="old") -> list:
    out: list = []
    _walk(reader.node, writer.node, "#", out, _Ctx(reader.node, writer.node))
    return out
