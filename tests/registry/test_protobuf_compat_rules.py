"""protobuf_compat against the verdicts of Confluent's protobuf diff rules, one case per rule:
the new schema (reader) checked against the old one (writer), as BACKWARD does."""
import pytest

from gregor.registry.schema_types import check, parse_schema

P3 = 'syntax = "proto3";\n'


def kinds(old, new):
    return [d.error_type for d in check(parse_schema("PROTOBUF", new),
                                        parse_schema("PROTOBUF", old))]


STATUS = "message Status { string s = 1; }\n"
ENUM = "enum Kind { A = 0; B = 1; }\n"

CASES = [
    # (old, new, expected incompatible differences)
    ("package foo;\nmessage M { string a = 1; M.Status b = 2; " + STATUS + "}",
     "package bar;\nmessage M { string a = 1; M.Status b = 2; " + STATUS + "}", []),
    ("message M { int32 a = 1; }", "message M { int64 a = 1; }", []),
    ("message M { uint64 a = 1; }", "message M { bool a = 1; }", []),
    ("message M { sint32 a = 1; }", "message M { sint64 a = 1; }", []),
    ("message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", []),
    ("message M { string a = 1; }", "message M { bytes a = 1; }", []),
    ("message M { int32 a = 1; }", "message M { Kind a = 1; }\n" + ENUM, []),
    ("message M { Kind a = 1; }\n" + ENUM, "message M { int32 a = 1; }", []),
    ("message M { int32 a = 1; }", "message M { string a = 1; }",
     ["FIELD_SCALAR_KIND_CHANGED"]),
    ("message M { int32 a = 1; }", "message M { sint32 a = 1; }",
     ["FIELD_SCALAR_KIND_CHANGED"]),
    ("message M { int32 a = 1; }", "message M { N a = 1; }\nmessage N { string s = 1; }",
     ["FIELD_KIND_CHANGED"]),
    ("message M { N a = 1; }\nmessage N { string s = 1; }",
     "message M { O a = 1; }\nmessage O { string s = 1; }",
     ["MESSAGE_REMOVED", "FIELD_NAMED_TYPE_CHANGED"]),
    ("message M { map<string, int32> m = 2; }", "message M { map<string, string> n = 2; }",
     ["FIELD_SCALAR_KIND_CHANGED"]),
    ("message M { map<string, int32> m = 2; }", "message M { map<string, int64> m = 2; }", []),
    ("message M { map<string, int32> m = 2; }", "message M { repeated int32 m = 2; }",
     ["FIELD_KIND_CHANGED"]),
    ("message M { optional N a = 1; }\nmessage N { string s = 1; }",
     "message M { repeated N a = 1; }\nmessage N { string s = 1; }", []),
    ("message M { optional string a = 1; }", "message M { repeated string a = 1; }", []),
    ("message M { optional int32 a = 1; }", "message M { repeated int32 a = 1; }",
     ["FIELD_NUMERIC_LABEL_CHANGED"]),
    ("message M { string a = 1; }", "message N { string a = 1; }\nmessage M { string a = 1; }",
     []),                                                  # moved and added
    ("message M { string a = 1; }\nmessage N { string a = 1; }", "message M { string a = 1; }",
     ["MESSAGE_REMOVED"]),
    ("message M { string a = 1; string b = 2; }",
     "message M { string a = 1; oneof o { string b = 2; int32 c = 3; } }", []),
    ("message M { string a = 1; string b = 2; }",
     "message M { oneof o { string a = 1; string b = 2; int32 c = 3; } }",
     ["MULTIPLE_FIELDS_MOVED_TO_ONEOF"]),
    ("message M { oneof o { string a = 1; string b = 2; } }",
     "message M { oneof o { string a = 1; string b = 2; int32 c = 3; } }", []),
    ("message M { oneof o { string a = 1; string b = 2; int32 c = 3; } }",
     "message M { oneof o { string a = 1; string b = 2; } }", ["ONEOF_FIELD_REMOVED"]),
    ("message M { string a = 1; }", "message M { string renamed = 1; }", []),
    ("message M { string a = 1; }", "message M { string a = 2; }", []),
    ("message M { Kind k = 1; }\n" + ENUM,
     "message M { Kind k = 1; }\nenum Kind { A = 0; C = 1; }", []),
]


@pytest.mark.parametrize("old, new, expected", CASES)
def test_proto3_rule(old, new, expected):
    assert sorted(kinds(P3 + old, P3 + new)) == sorted(expected)


def test_proto2_required_fields():
    p2 = 'syntax = "proto2";\n'
    old = p2 + "message M { optional string a = 1; }"
    new = p2 + "message M { optional string a = 1; required string b = 2; }"
    assert kinds(old, new) == ["REQUIRED_FIELD_ADDED"]
    assert kinds(new, old) == ["REQUIRED_FIELD_REMOVED"]


def test_difference_paths_are_package_relative():
    old = P3 + "package p;\nmessage M { message N { int32 a = 1; } }"
    new = P3 + "package p;\nmessage M { message N { string a = 1; } }"
    [d] = check(parse_schema("PROTOBUF", new), parse_schema("PROTOBUF", old))
    assert d.path == "#/M/N/1" and "type=FIELD_SCALAR_KIND_CHANGED" in d.message()


def _with_ref(dep_text, main_text):
    dep = parse_schema("PROTOBUF", P3 + "package d;\n" + dep_text)
    return parse_schema("PROTOBUF", P3 + 'import "dep.proto";\n' + main_text,
                        [("dep.proto", dep)])


MAIN = "message M { d.Ref r = 1; map<string, d.Ref> m = 2; }"


@pytest.mark.parametrize("old_dep, new_dep, expected", [
    ("message Ref { int32 a = 1; }", "message Ref { string a = 1; }",
     [("FIELD_SCALAR_KIND_CHANGED", "#/Ref/1")]),
    ("message Ref { int32 a = 1; }", "message Ref { int64 a = 1; }", []),
    ("message Ref { int32 a = 1; }", "message Ref { int32 a = 1; string b = 2; }", []),
    ("message Ref { Inner i = 1; message Inner { int32 x = 1; } }",
     "message Ref { Inner i = 1; message Inner { string x = 1; } }",
     [("FIELD_SCALAR_KIND_CHANGED", "#/Ref/Inner/1")]),
    ("message Ref { oneof o { string a = 1; int32 b = 2; } }",
     "message Ref { oneof o { string a = 1; } }",
     [("ONEOF_FIELD_REMOVED", "#/Ref/o/2")]),
])
def test_referenced_messages_are_compared(old_dep, new_dep, expected):
    found = check(_with_ref(new_dep, MAIN), _with_ref(old_dep, MAIN))
    assert sorted((d.error_type, d.path) for d in found) == expected


def test_referenced_recursive_message_terminates():
    dep = "message Ref { Ref next = 1; int32 a = 2; }"
    assert check(_with_ref(dep, MAIN), _with_ref(dep, MAIN)) == []
