"""JSON Schema and Protobuf: parsing, canonical text, and the subset of Confluent's rules."""
import base64
import json

import pytest
from google.protobuf import descriptor_pb2

from gregor.registry.compatibility import check_level
from gregor.registry.schema_types import InvalidSchema, parse_schema

F = descriptor_pb2.FieldDescriptorProto


def js(node):
    return parse_schema("JSON", json.dumps(node))


def json_errors(new, old):
    return [m for m in check_level(js(new), [(1, type("V", (), {"schema": "x"})(), js(old))],
                                   "BACKWARD") if m.startswith("Found")]


OBJ = {"type": "object", "properties": {"a": {"type": "integer"}}}


def test_json_schema_parse_and_canonical():
    s = parse_schema("JSON", '{ "type" : "object",  "properties": {"b": {}, "a": {}} }')
    assert s.canonical == '{"type":"object","properties":{"b":{},"a":{}}}'
    assert s.normalized == '{"properties":{"a":{},"b":{}},"type":"object"}'
    with pytest.raises(InvalidSchema, match="is not valid"):
        parse_schema("JSON", '{"type": "integr"}')
    with pytest.raises(InvalidSchema):
        parse_schema("JSON", '[1, 2]')


@pytest.mark.parametrize("new,old,kind", [
    ({"type": "integer"}, {"type": "number"}, "TYPE_NARROWED"),
    ({"type": "string"}, {"type": "integer"}, "TYPE_CHANGED"),
    ({"enum": ["a"]}, {"enum": ["a", "b"]}, "ENUM_ARRAY_NARROWED"),
    ({"type": "string", "maxLength": 3}, {"type": "string", "maxLength": 5},
     "MAX_LENGTH_DECREASED"),
    ({"type": "integer", "minimum": 3}, {"type": "integer"}, "MINIMUM_ADDED"),
    (dict(OBJ, required=["a"]), OBJ, "REQUIRED_ATTRIBUTE_ADDED"),
    (dict(OBJ, additionalProperties=False), OBJ, "ADDITIONAL_PROPERTIES_REMOVED"),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
     OBJ, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    ({"type": "object", "properties": {}, "additionalProperties": False},
     dict(OBJ, additionalProperties=False), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    ({"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": {}},
     "TYPE_NARROWED"),
])
def test_json_incompatible_changes(new, old, kind):
    found = json_errors(new, old)
    assert found and kind in found[0], found


@pytest.mark.parametrize("new,old", [
    ({"type": "number"}, {"type": "integer"}),
    ({"enum": ["a", "b"]}, {"enum": ["a"]}),
    (OBJ, dict(OBJ, required=["a"])),
    (OBJ, dict(OBJ, additionalProperties=False)),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}},
     dict(OBJ, additionalProperties=False)),
    ({"type": "string", "maxLength": 9}, {"type": "string", "maxLength": 5}),
])
def test_json_compatible_changes(new, old):
    assert json_errors(new, old) == []


def fdp(fields, package="p", name="m.proto", oneofs=()):
    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    m = fd.message_type.add(name="M")
    for decl in oneofs:
        m.oneof_decl.add(name=decl)
    for number, fname, ftype, extra in fields:
        f = m.field.add(name=fname, number=number, type=ftype, label=F.LABEL_OPTIONAL)
        for k, v in extra.items():
            setattr(f, k, v)
    return fd


def pb(fd):
    return parse_schema("PROTOBUF", base64.b64encode(fd.SerializeToString()).decode())


def pb_errors(new, old):
    v = type("V", (), {"schema": "x"})()
    return [m for m in check_level(pb(new), [(1, v, pb(old))], "BACKWARD")
            if m.startswith("Found")]


def test_protobuf_descriptor_parse_and_bad_input():
    fd = fdp([(1, "a", F.TYPE_INT32, {})])
    s = pb(fd)
    assert base64.b64decode(s.canonical) == fd.SerializeToString()
    with pytest.raises(InvalidSchema, match="not .proto text nor a base64"):
        parse_schema("PROTOBUF", "this is { not a schema")
    broken = fdp([(1, "a", F.TYPE_MESSAGE, {"type_name": ".p.Missing"})])
    with pytest.raises(InvalidSchema, match="does not build"):
        pb(broken)


def test_protobuf_rules():
    base = fdp([(1, "a", F.TYPE_INT32, {}), (2, "b", F.TYPE_STRING, {})])
    assert pb_errors(fdp([(1, "a", F.TYPE_INT32, {})]), base) == []         # field removed
    assert pb_errors(fdp([(1, "renamed", F.TYPE_INT32, {}), (2, "b", F.TYPE_STRING, {}),
                          (3, "c", F.TYPE_BOOL, {})]), base) == []        # renamed + added
    assert "FIELD_SCALAR_KIND_CHANGED" in pb_errors(
        fdp([(1, "a", F.TYPE_STRING, {}), (2, "b", F.TYPE_STRING, {})]), base)[0]
    # Confluent accepts a package change (messages match by name within the package)
    assert pb_errors(
        fdp([(1, "a", F.TYPE_INT32, {}), (2, "b", F.TYPE_STRING, {})], package="q"), base) == []
    moved = fdp([(1, "a", F.TYPE_INT32, {"oneof_index": 0}),
                 (2, "b", F.TYPE_STRING, {"oneof_index": 0})], oneofs=["choice"])
    assert "MULTIPLE_FIELDS_MOVED_TO_ONEOF" in pb_errors(moved, base)[0]
    assert "ONEOF_FIELD_REMOVED" in pb_errors(base, moved)[0]


ORDER_PROTO = '''syntax = "proto3";
package acme.v1;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  google.protobuf.Timestamp at = 2;
  map<string, Line> lines = 3;
  optional string note = 4;
  Status status = 5;
  oneof pay { string card = 6; bytes token = 7; }
  message Line { int32 qty = 1 [deprecated = true]; }
  enum Status { UNKNOWN = 0; OK = 1; }
  reserved 9, 10;
}
'''


def test_proto_text_is_parsed_into_a_descriptor():
    s = parse_schema("PROTOBUF", ORDER_PROTO)
    assert s.canonical == ORDER_PROTO.strip()             # stored as sent
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(s.serialized()))
    order = fd.message_type[0]
    by_name = {f.name: f for f in order.field}
    assert by_name["at"].type_name == ".google.protobuf.Timestamp"
    assert by_name["lines"].type_name == ".acme.v1.Order.LinesEntry"
    assert by_name["status"].type == F.TYPE_ENUM
    assert by_name["note"].proto3_optional
    assert [d.name for d in order.oneof_decl] == ["pay", "_note"]
    with pytest.raises(InvalidSchema, match="line 2.*'Missing' is not defined"):
        parse_schema("PROTOBUF", 'syntax = "proto3";\nmessage M { Missing m = 1; }')
    with pytest.raises(InvalidSchema, match="line 1"):
        parse_schema("PROTOBUF", 'syntax = "proto3"; message M { int32 = 1; }')


def test_proto_text_references_by_import_name():
    from gregor.registry.service import RegistryService
    from gregor.registry.state import RegistryState
    state = RegistryState()
    n = [0]

    def write(recs):
        for k, v in recs:
            state.apply(k, v, n[0])
            n[0] += 1
    svc = RegistryService(state, write)
    svc.register("money", {"schemaType": "PROTOBUF", "schema":
                           'syntax = "proto3"; package fin; message Money { int64 cents = 1; }'})
    body = {"schemaType": "PROTOBUF", "references": [{"name": "fin/money.proto",
                                                       "subject": "money", "version": 1}],
            "schema": 'syntax = "proto3"; import "fin/money.proto"; '
                      'message Price { fin.Money amount = 1; }'}
    sid = svc.register("price", body)
    assert state.by_id[sid].references == (("fin/money.proto", "money", 1),)
    # the same text without its reference does not build
    with pytest.raises(Exception, match="42201|not defined"):
        svc.register("price2", dict(body, references=[]))
