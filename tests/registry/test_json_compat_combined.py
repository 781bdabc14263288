"""json_compat on oneOf / anyOf / allOf, with the verdicts of Confluent's combined-schema
diff rules: the new schema (reader) against the old one (writer)."""
import json

import pytest

from gregor.registry.schema_types import check, parse_schema

S, N, B = {"type": "string"}, {"type": "number"}, {"type": "boolean"}
ENUM = {"enum": ["one", "two"]}


def kinds(old_prop, new_prop):
    wrap = lambda p: json.dumps({"type": "object", "properties": {"p": p}})  # noqa: E731
    return [d.error_type for d in check(parse_schema("JSON", wrap(new_prop)),
                                        parse_schema("JSON", wrap(old_prop)))]


CASES = [
    ({"allOf": [ENUM, S, {"maxLength": 5}]}, {"allOf": [{"maxLength": 5}, ENUM, S]}, []),
    ({"allOf": [ENUM, S, {"maxLength": 5}]}, {"allOf": [{"maxLength": 5}, ENUM, N]},
     ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]),
    ({"allOf": [S, S]}, {"allOf": [S]}, []),
    ({"allOf": [S]}, {"allOf": [S, S]}, []),
    ({"oneOf": [S]}, {"oneOf": [N, S]}, []),
    ({"oneOf": [S]}, {"oneOf": [B, N, S]}, []),
    ({"oneOf": [N, S]}, {"oneOf": [S]}, ["SUM_TYPE_NARROWED"]),
    ({"allOf": [ENUM, S]}, {"allOf": [S]}, []),
    ({"allOf": [S]}, {"allOf": [ENUM, S]}, ["PRODUCT_TYPE_EXTENDED"]),
    ({"oneOf": [S]}, {"anyOf": [S]}, []),
    ({"oneOf": [S]}, {"anyOf": [N, S]}, []),
    ({"allOf": [S]}, {"anyOf": [S]}, []),
    ({"anyOf": [S]}, {"oneOf": [N, S]}, []),
    ({"anyOf": [N, S]}, {"oneOf": [S]}, ["COMBINED_TYPE_CHANGED"]),
    ({"allOf": [N]}, {"oneOf": [N, S]}, []),
    ({"anyOf": [S]}, {"allOf": [S]}, []),
    ({"oneOf": [S]}, {"allOf": [S]}, []),
    ({"anyOf": [S]}, {"allOf": [N, S]}, ["COMBINED_TYPE_CHANGED"]),
    ({"oneOf": [S]}, {"allOf": [N, S]}, ["COMBINED_TYPE_CHANGED"]),
    (S, {"anyOf": [N, S]}, []),
    (S, {"oneOf": [N, S]}, []),
    (S, {"oneOf": [N, B]}, ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]),
    (S, {"allOf": [S]}, []),
    (S, {"allOf": [N, S]}, ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]),
]


@pytest.mark.parametrize("old, new, expected", CASES)
def test_combined_rule(old, new, expected):
    assert kinds(old, new) == expected
