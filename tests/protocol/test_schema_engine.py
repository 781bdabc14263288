"""The schema engine itself: description checks, versions, nullable structs, defaults and
encode errors that name the field."""
from __future__ import annotations

import pytest

from gregor.protocol import messages
from gregor.protocol.schema import INF, NULL, Api, EncodeError, F, parse_versions


def test_parse_versions():
    assert parse_versions("3+") == (3, INF)
    assert parse_versions("0-7") == (0, 7)
    assert parse_versions("2") == (2, 2)
    assert parse_versions(None) is None and parse_versions("none") is None


def test_descriptions_are_checked():
    with pytest.raises(ValueError, match="unknown type"):
        F("x", "int128")
    with pytest.raises(ValueError, match="needs a tag"):
        F("x", "int32", tagged="1+")
    with pytest.raises(ValueError, match="fields go with"):
        F("x", "int32", fields=[F("y", "int8")])
    with pytest.raises(ValueError, match="fields go with"):
        F("x", "[]")


_NESTED = Api(key=998, name="Nested", valid=(0, 2), flexible=2, request=[
    F("leader", "struct", nullable="1+", fields=[F("id", "int32", default=-1),
                                                 F("epoch", "int32", v="1+", default=-1)]),
    F("ids", "[]int64", nullable="0+"),
    F("items", "[]", v="1+", fields=[F("name", "string"), F("blob", "bytes", nullable="0+",
                                                                   default=NULL)]),
], response=[])


def test_nullable_struct_and_arrays():
    codec = _NESTED.request_codec(1)
    wire = codec.encode({"leader": None, "ids": None, "items": []})
    assert wire == b"\xff" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00"
    assert codec.decode(wire) == {"leader": None, "ids": None, "items": []}
    full = {"leader": {"id": 3, "epoch": 4}, "ids": [1, -1],
            "items": [{"name": "a", "blob": None}, {"name": "", "blob": b"\x00"}]}
    assert codec.decode(codec.encode(full)) == full


def test_struct_defaults_and_absent_fields():
    v0 = _NESTED.request_codec(0)
    assert v0.decode(v0.encode({})) == {"leader": {"id": -1, "epoch": -1}, "ids": [],
                                        "items": []}
    # a struct that is not nullable in v0 cannot be null
    with pytest.raises(EncodeError, match="'leader'"):
        v0.encode({"leader": None})


def test_flexible_version_uses_compact_forms():
    v2 = _NESTED.request_codec(2)
    wire = v2.encode({"leader": {"id": 1, "epoch": 2}, "ids": [5], "items": [{"name": "n"}]})
    assert wire == (b"\x01" + b"\x00\x00\x00\x01\x00\x00\x00\x02\x00"  # present struct + tags
                    + b"\x02" + b"\x00" * 7 + b"\x05"  # compact array of one int64
                    + b"\x02" + b"\x02n" + b"\x00"  # compact array: string, null blob
                    + b"\x00"  # the element's tags
                    + b"\x00")  # message tags
    assert v2.decode(wire)["items"] == [{"name": "n", "blob": None}]


def test_encode_errors_name_the_field_path():
    produce = messages.api("Produce").request_codec(9)
    with pytest.raises(EncodeError, match="'topic_data': field 'partition_data': field 'index'"):
        produce.encode({"topic_data": [{"name": "t", "partition_data": [{"index": "zero"}]}]})
    with pytest.raises(EncodeError, match="'acks'"):
        produce.encode({"acks": 1 << 20})
    with pytest.raises(EncodeError, match="mapping"):
        produce.encode(["not", "a", "dict"])
    assert issubclass(EncodeError, ValueError)


def test_api_registry():
    assert messages.api(0) is messages.api("Produce")
    assert messages.APIS[18].name == "ApiVersions"
    with pytest.raises(KeyError):
        messages.api("NoSuchApi")
