"""Avro compatibility as the spec's schema resolution and Avro-Java's checker define it."""
import json

import pytest

from gregor.registry.avro import parse_avro
from gregor.registry.avro_compat import check_avro
from gregor.registry.compatibility import check_level


def rec(*fields, name="R", **extra):
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **extra})


def errs(reader, writer):
    return [i.error_type for i in check_avro(parse_avro(reader), parse_avro(writer))]


@pytest.mark.parametrize("reader,writer", [
    ('"long"', '"int"'), ('"float"', '"long"'), ('"double"', '"float"'), ('"double"', '"int"'),
    ('"string"', '"bytes"'), ('"bytes"', '"string"'),
    ('["null","long"]', '"int"'),
    ('["null","string","int"]', '["int","null"]'),
])
def test_promotions_and_unions_that_read(reader, writer):
    assert errs(reader, writer) == []


@pytest.mark.parametrize("reader,writer,error", [
    ('"int"', '"long"', "TYPE_MISMATCH"),
    ('"int"', '"string"', "TYPE_MISMATCH"),
    ('["null","int"]', '"string"', "MISSING_UNION_BRANCH"),
    ('"int"', '["null","int"]', "TYPE_MISMATCH"),
    ('["int"]', '["null","int"]', "MISSING_UNION_BRANCH"),
])
def test_types_that_do_not_read(reader, writer, error):
    assert errs(reader, writer) == [error]


def test_record_fields_defaults_and_aliases():
    old = rec({"name": "a", "type": "int"})
    added_no_default = rec({"name": "a", "type": "int"}, {"name": "b", "type": "string"})
    added_default = rec({"name": "a", "type": "int"},
                        {"name": "b", "type": "string", "default": ""})
    renamed_alias = rec({"name": "z", "type": "int", "aliases": ["a"]})
    assert errs(added_no_default, old) == ["READER_FIELD_MISSING_DEFAULT_VALUE"]
    assert errs(added_default, old) == []
    assert errs(old, added_no_default) == []        # writer-only fields are skipped
    assert errs(renamed_alias, old) == []
    message = check_avro(parse_avro(added_no_default), parse_avro(old))[0].message()
    assert "'b'" in message and "/fields/1" in message


def test_record_names_and_aliases():
    assert errs(rec(name="A"), rec(name="B")) == ["NAME_MISMATCH"]
    assert errs(rec(name="A", aliases=["B"]), rec(name="B")) == []
    # unqualified names match across namespaces, as Avro-Java compares them
    assert errs(rec(name="x.A"), rec(name="y.A")) == []


def test_enums_fixed_and_decimals():
    e1 = '{"type":"enum","name":"E","symbols":["A","B"]}'
    e2 = '{"type":"enum","name":"E","symbols":["A"]}'
    e2d = '{"type":"enum","name":"E","symbols":["A","U"],"default":"U"}'
    assert errs(e2, e1) == ["MISSING_ENUM_SYMBOLS"]
    assert errs(e1, e2) == []
    assert errs(e2d, e1) == []
    assert errs('{"type":"fixed","name":"F","size":4}',
                '{"type":"fixed","name":"F","size":8}') == ["FIXED_SIZE_MISMATCH"]
    d = '{{"type":"bytes","logicalType":"decimal","precision":{},"scale":{}}}'
    assert errs(d.format(10, 2), d.format(10, 2)) == []
    assert errs(d.format(10, 3), d.format(10, 2)) == ["TYPE_MISMATCH"]


def test_recursive_types_terminate():
    node = rec({"name": "v", "type": "int"},
               {"name": "next", "type": ["null", "Node"], "default": None}, name="Node")
    node2 = rec({"name": "v", "type": "long"},
                {"name": "next", "type": ["null", "Node"], "default": None}, name="Node")
    assert errs(node2, node) == []
    assert errs(node, node2) == ["TYPE_MISMATCH"]


def _versions(*texts):
    return [(i + 1, type("V", (), {"schema": t})(), parse_avro(t)) for i, t in enumerate(texts)]


def test_levels_and_transitivity():
    v1 = rec({"name": "a", "type": "int"})
    v2 = rec({"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0})
    v3 = rec({"name": "b", "type": "int", "default": 0})          # drops a (no default in v1)
    new_drop_a = parse_avro(v3)
    assert check_level(new_drop_a, _versions(v1, v2), "NONE") == []
    assert check_level(new_drop_a, _versions(v1, v2), "BACKWARD") == []
    # FORWARD: the old schemas must read the new data; v1/v2 need `a`, which v3 lacks
    forward = check_level(new_drop_a, _versions(v1, v2), "FORWARD")
    assert forward and "READER_FIELD_MISSING_DEFAULT_VALUE" in forward[0]
    assert "{oldSchemaVersion: 2}" in forward
    new_int_to_string = parse_avro(rec({"name": "a", "type": "string"}))
    assert check_level(new_int_to_string, _versions(v1), "FULL")
    # transitive: v1 -> v2 -> v3 are each backward compatible, v3 with v1 too; a schema
    # compatible with the latest only fails the transitive level
    w1 = rec({"name": "a", "type": "string"})
    w2 = rec({"name": "a", "type": "bytes"})
    w3 = parse_avro(rec({"name": "a", "type": "bytes"}, {"name": "c", "type": "int",
                                                           "default": 1}))
    assert check_level(w3, _versions(w1, w2), "BACKWARD_TRANSITIVE") == []
    x1 = rec({"name": "a", "type": "int"})
    x2 = rec({"name": "a", "type": "long"})
    x3 = parse_avro(rec({"name": "a", "type": "long"}, {"name": "d", "type": "int"}))
    # x3 lacks a default for d: fails against both; the transitive check names version 2 first
    assert "{oldSchemaVersion: 2}" in check_level(x3, _versions(x1, x2), "BACKWARD_TRANSITIVE")
    y3 = parse_avro('"int"')
    assert check_level(parse_avro(x1), _versions(x1), "BACKWARD") == []
    assert check_level(y3, _versions(x1, x2), "BACKWARD")


def test_transitive_fails_where_latest_passes():
    v1 = rec({"name": "a", "type": "int"})
    v2 = rec()                                                   # a dropped
    v3 = parse_avro(rec({"name": "a", "type": "string", "default": ""}))
    assert check_level(v3, _versions(v1, v2), "BACKWARD") == []
    found = check_level(v3, _versions(v1, v2), "BACKWARD_TRANSITIVE")
    assert "{oldSchemaVersion: 1}" in found and "TYPE_MISMATCH" in found[0]
    assert check_level(v3, _versions(v1, v2), "FULL_TRANSITIVE")
