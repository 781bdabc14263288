"""json_compat on $ref, not, patternProperties, dependencies, pattern, multipleOf,
uniqueItems and tuple items, one case per rule, with the names of Confluent's JSON Schema
differences: the new schema (reader) against the old one (writer), as BACKWARD checks it."""
import json

import pytest

from gregor.registry.schema_types import check, parse_schema

S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def kinds(old, new):
    return [d.error_type for d in check(parse_schema("JSON", json.dumps(new)),
                                        parse_schema("JSON", json.dumps(old)))]


def obj(**kw):
    return {"type": "object", **kw}


def ref_to(target, where="definitions"):
    return {where: {"T": target}, "type": "object",
            "properties": {"p": {"$ref": f"#/{where}/T"}}}


def tup(items, rest=None):
    out = {"type": "array", "items": items}
    return out if rest is None else {**out, "additionalItems": rest}


def ptup(items, rest=None):
    out = {"type": "array", "prefixItems": items}
    return out if rest is None else {**out, "items": rest}


TREE = {"definitions": {"node": {"type": "object", "properties": {
    "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}},
    "$ref": "#/definitions/node"}

CASES = [
    # $ref: the targets are compared (draft 7 definitions, 2019+ $defs), recursion terminates
    ("ref target unchanged", ref_to(S), ref_to(S), []),
    ("ref target narrowed", ref_to(N), ref_to(I), ["TYPE_NARROWED"]),
    ("ref target extended", ref_to(I, "$defs"), ref_to(N, "$defs"), []),
    ("ref inlined", ref_to(S), obj(properties={"p": S}), []),
    ("inline to ref changed", obj(properties={"p": S}), ref_to(I), ["TYPE_CHANGED"]),
    ("recursive ref unchanged", TREE, TREE, []),
    ("recursive ref narrowed", TREE,
     json.loads(json.dumps(TREE).replace('"v": {"type": "integer"}',
                                         '"v": {"type": "integer", "maximum": 9}')),
     ["MAXIMUM_ADDED"]),
    # not: the excluded set may shrink (NOT_TYPE_NARROWED), not grow
    ("not narrowed", {"not": {"type": ["string", "integer"]}}, {"not": S}, []),
    ("not extended", {"not": S}, {"not": {"type": ["string", "integer"]}},
     ["NOT_TYPE_EXTENDED"]),
    ("not added", {}, {"not": S}, ["NOT_TYPE_EXTENDED"]),
    ("not removed", {"not": S}, {}, []),
    # patternProperties: a partially open content model covers what it matches
    ("property added, covered", obj(patternProperties={"^s_": S}),
     obj(properties={"s_a": S}, patternProperties={"^s_": S}), []),
    ("property added, not covered", obj(patternProperties={"^s_": S}),
     obj(properties={"s_a": I}, patternProperties={"^s_": S}),
     ["PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("property added, additionalProperties schema", obj(additionalProperties=S),
     obj(properties={"a": I}, additionalProperties=S),
     ["PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("property removed, covered", obj(properties={"s_a": S}, additionalProperties=False),
     obj(patternProperties={"^s_": S}, additionalProperties=False), []),
    ("property removed, not covered", obj(properties={"s_a": I}, additionalProperties=False),
     obj(patternProperties={"^s_": S}, additionalProperties=False),
     ["PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("property removed from open model", obj(properties={"a": I}), obj(), []),
    ("property with empty schema added to open model", obj(), obj(properties={"a": {}}), []),
    ("pattern added to open model", obj(), obj(patternProperties={"^s_": S}),
     ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]),
    ("pattern narrowed", obj(patternProperties={"^s_": N}), obj(patternProperties={"^s_": I}),
     ["TYPE_NARROWED"]),
    ("pattern removed", obj(patternProperties={"^s_": S}), obj(), []),
    # dependencies (draft 7) and dependentRequired / dependentSchemas (2019-09 on)
    ("dependency array added", obj(), obj(dependencies={"a": ["b"]}),
     ["DEPENDENCY_ARRAY_ADDED"]),
    ("dependency array extended", obj(dependencies={"a": ["b"]}),
     obj(dependencies={"a": ["b", "c"]}), ["DEPENDENCY_ARRAY_EXTENDED"]),
    ("dependency array narrowed", obj(dependencies={"a": ["b", "c"]}),
     obj(dependencies={"a": ["b"]}), []),
    ("dependency array changed", obj(dependencies={"a": ["b"]}), obj(dependencies={"a": ["c"]}),
     ["DEPENDENCY_ARRAY_CHANGED"]),
    ("dependency array removed", obj(dependencies={"a": ["b"]}), obj(), []),
    ("dependentRequired added", obj(), obj(dependentRequired={"a": ["b"]}),
     ["DEPENDENCY_ARRAY_ADDED"]),
    ("dependency schema added", obj(), obj(dependencies={"a": {"required": ["b"]}}),
     ["DEPENDENCY_SCHEMA_ADDED"]),
    ("dependentSchemas added", obj(), obj(dependentSchemas={"a": {"required": ["b"]}}),
     ["DEPENDENCY_SCHEMA_ADDED"]),
    ("dependency schema removed", obj(dependencies={"a": {"required": ["b"]}}), obj(), []),
    ("dependency schema narrowed", obj(dependencies={"a": {"properties": {"b": N}}}),
     obj(dependencies={"a": {"properties": {"b": I}}}), ["TYPE_NARROWED"]),
    # pattern: added or changed narrows the strings read (a changed regex is not compared)
    ("pattern added", S, {**S, "pattern": "^a"}, ["PATTERN_ADDED"]),
    ("pattern removed", {**S, "pattern": "^a"}, S, []),
    ("pattern changed", {**S, "pattern": "^a"}, {**S, "pattern": "^b"}, ["PATTERN_CHANGED"]),
    ("pattern unchanged", {**S, "pattern": "^a"}, {**S, "pattern": "^a"}, []),
    # multipleOf: the reader's divisor must divide the writer's
    ("multipleOf added", I, {**I, "multipleOf": 2}, ["MULTIPLE_OF_ADDED"]),
    ("multipleOf removed", {**I, "multipleOf": 2}, I, []),
    ("multipleOf expanded", {**I, "multipleOf": 2}, {**I, "multipleOf": 4},
     ["MULTIPLE_OF_EXPANDED"]),
    ("multipleOf reduced", {**I, "multipleOf": 4}, {**I, "multipleOf": 2}, []),
    ("multipleOf reduced, fractions", {**N, "multipleOf": 0.5}, {**N, "multipleOf": 0.25}, []),
    ("multipleOf changed", {**I, "multipleOf": 6}, {**I, "multipleOf": 4},
     ["MULTIPLE_OF_CHANGED"]),
    # uniqueItems
    ("uniqueItems added", {"type": "array"}, {"type": "array", "uniqueItems": True},
     ["UNIQUE_ITEMS_ADDED"]),
    ("uniqueItems removed", {"type": "array", "uniqueItems": True}, {"type": "array"}, []),
    # tuple items (items list + additionalItems; prefixItems + items from 2020-12)
    ("tuple item narrowed", tup([N]), tup([I]), ["TYPE_NARROWED"]),
    ("item added to open content model", tup([S]), tup([S, I]),
     ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL"]),
    ("item added to closed content model", tup([S], False), tup([S, I]), []),
    ("item added, covered", tup([S], I), tup([S, N], I), []),
    ("item added, not covered", tup([S], I), tup([S, S], I),
     ["ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("item removed from open content model", tup([S, I]), tup([S]), []),
    ("item removed from closed content model", tup([S, I], False), tup([S], False),
     ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"]),
    ("false item removed from closed content model", tup([S, False], False),
     tup([S], False), []),
    ("empty item added to open content model", tup([S]), tup([S, {}]), []),
    ("item removed, covered", tup([S, I], False), tup([S], N), []),
    ("item removed, not covered", tup([S, I], False), tup([S], S),
     ["ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("additionalItems removed", tup([S]), tup([S], False), ["ADDITIONAL_ITEMS_REMOVED"]),
    ("additionalItems narrowed", tup([S]), tup([S], I), ["ADDITIONAL_ITEMS_NARROWED"]),
    ("additionalItems schema narrowed", tup([S], N), tup([S], I), ["TYPE_NARROWED"]),
    ("additionalItems extended", tup([S], False), tup([S]), []),
    ("prefixItems item added to open content model", ptup([S]), ptup([S, I]),
     ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL"]),
    ("prefixItems closed", ptup([S]), ptup([S], False), ["ADDITIONAL_ITEMS_REMOVED"]),
    ("list items read as a tuple", {"type": "array", "items": N}, tup([I], N),
     ["ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]),
    ("tuple read as list items", tup([I], I), {"type": "array", "items": N}, []),
    # format is not compared (accepted either way)
    ("format added", S, {**S, "format": "email"}, []),
]


@pytest.mark.parametrize("old, new, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(old, new, expected):
    assert kinds(old, new) == expected


def test_difference_path_names_the_dependency():
    old, new = obj(), obj(dependentRequired={"a": ["b"]})
    [d] = check(parse_schema("JSON", json.dumps(new)), parse_schema("JSON", json.dumps(old)))
    assert d.path == "#/dependentRequired/a"


def test_new_pattern_applies_to_kept_properties():
    old = obj(properties={"s_a": I}, additionalProperties=False)
    new = obj(properties={"s_a": I}, patternProperties={"^s_": S}, additionalProperties=False)
    assert kinds(old, new) == ["PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"]


def test_difference_path_names_the_tuple_position():
    old, new = tup([S, I], False), tup([S], False)
    [d] = check(parse_schema("JSON", json.dumps(new)), parse_schema("JSON", json.dumps(old)))
    assert (d.error_type, d.path) == ("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/items/1")
