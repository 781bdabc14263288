"""protobuf_print: a descriptor printed as .proto text parses back to the same descriptor."""
from google.protobuf import descriptor_pb2, timestamp_pb2, struct_pb2, type_pb2

from gregor.registry.protobuf_print import print_proto
from gregor.registry.protobuf_text import known_types, parse_proto
from gregor.registry.schema_types import _well_known_files

SOURCE = '''syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  repeated int32 qty = 2;
  map<string, Item> items = 3;
  oneof pay { string card = 4; int64 cash = 5; }
  optional string note = 6;
  google.protobuf.Timestamp at = 7;
  message Item { string sku = 1; Kind kind = 2; map<int32, string> tags = 3; }
  enum Kind { KIND_UNSET = 0; BOOK = 1; }
}
enum Status { UNKNOWN = 0; DONE = 1; }
'''

PROTO2 = '''syntax = "proto2";
package legacy;
message Old {
  required string id = 1;
  optional int32 n = 2;
  repeated bytes blobs = 3;
}
'''


def _known(text):
    return known_types(_well_known_files(text))


def _plain(fd):
    """What the parser keeps: options and json names are dropped on both sides."""
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(fd)
    out.ClearField("options")
    out.ClearField("source_code_info")

    def strip(msgs):
        for m in msgs:
            m.ClearField("options") if not m.options.map_entry else None
            for f in m.field:
                f.ClearField("json_name")
                f.ClearField("options")
            for e in m.enum_type:
                e.ClearField("options")
            strip(m.nested_type)
    strip(out.message_type)
    for e in out.enum_type:
        e.ClearField("options")
    out.name = "schema.proto"
    return out


def test_source_round_trip():
    fd = parse_proto(SOURCE, _known(SOURCE))
    text = print_proto(fd)
    assert "map<string, .shop.v1.Order.Item> items = 3;" in text
    assert "optional string note = 6;" in text
    assert "oneof pay {" in text and "_note" not in text
    assert parse_proto(text, _known(text)) == fd


def test_proto2_labels_round_trip():
    fd = parse_proto(PROTO2, {})
    text = print_proto(fd)
    assert "required string id = 1;" in text and "optional int32 n = 2;" in text
    assert parse_proto(text, {}) == fd


def test_compiled_descriptors_print_options_and_round_trip():
    for module in (timestamp_pb2, struct_pb2, type_pb2):
        fd = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fd)
        text = print_proto(fd)
        assert 'option java_package = "com.google.protobuf";' in text
        assert _plain(parse_proto(text, _known(text))) == _plain(fd)


def test_field_options_printed():
    fd = parse_proto(SOURCE, _known(SOURCE))
    order = fd.message_type[0]
    order.field[1].options.packed = True
    order.field[0].options.deprecated = True
    text = print_proto(fd)
    assert "repeated int32 qty = 2 [packed = true];" in text
    assert "string id = 1 [deprecated = true];" in text


# Random proto3 files: scalar / enum / message / map fields, repeated, proto3 optional,
# oneofs and nested messages; printed and parsed back, they give the same descriptor.
from hypothesis import given, settings, strategies as st  # noqa: E402

_SCALARS = ["double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool",
            "string", "bytes", "uint32", "sfixed32", "sfixed64", "sint32", "sint64"]
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in {"optional", "repeated", "required", "map", "oneof", "message",
                        "enum", "reserved", "option", "syntax", "package", "import",
                        "group", "extensions", "extend", "service", "rpc", "returns",
                        "stream", "to", "max", "public", "weak"} and n not in _SCALARS)


@st.composite
def _message(draw, name, depth):
    types = _SCALARS + ["Color"] + (["Inner"] if depth == 0 else [])
    names = draw(st.lists(_NAMES, min_size=1, max_size=6, unique=True))
    lines, number = [], 1
    oneof = []
    for fname in names:
        kind = draw(st.sampled_from(["plain", "repeated", "optional", "map", "oneof"]))
        ftype = draw(st.sampled_from(types))
        if kind == "map":
            key = draw(st.sampled_from(["string", "int32", "int64", "bool", "uint32"]))
            lines.append(f"map<{key}, {ftype}> {fname} = {number};")
        elif kind == "oneof":
            oneof.append(f"{ftype} {fname} = {number};")
        else:
            label = "" if kind == "plain" else kind + " "
            lines.append(f"{label}{ftype} {fname} = {number};")
        number += draw(st.integers(1, 3))
    if oneof:
        lines.append("oneof choice { " + " ".join(oneof) + " }")
    if depth == 0:
        lines.append(draw(_message("Inner", 1)))
    return f"message {name} {{ " + " ".join(lines) + " }"


@settings(max_examples=60, deadline=None)
@given(_message("Root", 0))
def test_random_files_round_trip(body):
    src = 'syntax = "proto3";\npackage gen.v1;\nenum Color { RED = 0; BLUE = 1; }\n' + body
    fd = parse_proto(src, {})
    text = print_proto(fd)
    assert parse_proto(text, {}) == fd
    assert print_proto(parse_proto(text, {})) == text
