"""Avro schemas: fastavro's checks, and the canonical text Confluent stores."""
import pytest

from gregor.registry.avro import AvroSchemaError, parse_avro


@pytest.mark.parametrize("text,canonical", [
    ('{"type":"string"}', '"string"'),
    ('  "int" ', '"int"'),
    ('{"type":"string","logicalType":"uuid"}', '{"type":"string","logicalType":"uuid"}'),
    # Avro-Java's attribute order, whatever the order written
    ('{"fields":[{"type":"int","name":"a","doc":"d","default":1}],"name":"R","type":"record"}',
     '{"type":"record","name":"R","fields":[{"name":"a","type":"int","doc":"d","default":1}]}'),
    # a full name splits into name and namespace; nested types inherit it and say nothing
    ('{"type":"record","name":"a.b.R","fields":[{"name":"e","type":{"type":"enum",'
     '"name":"E","symbols":["X"]}},{"name":"f","type":"E"}]}',
     '{"type":"record","name":"R","namespace":"a.b","fields":[{"name":"e","type":{"type":'
     '"enum","name":"E","symbols":["X"]}},{"name":"f","type":"E"}]}'),
    # a type of another namespace is referred to by its full name
    ('{"type":"record","name":"R","namespace":"x","fields":[{"name":"f","type":{"type":'
     '"fixed","name":"y.F","size":4}},{"name":"g","type":"y.F"}]}',
     '{"type":"record","name":"R","namespace":"x","fields":[{"name":"f","type":{"type":'
     '"fixed","name":"F","namespace":"y","size":4}},{"name":"g","type":"y.F"}]}'),
    ('{"type":"array","items":{"type":"map","values":"long"}}',
     '{"type":"array","items":{"type":"map","values":"long"}}'),
    ('["null",{"type":"string"}]', '["null","string"]'),
])
def test_canonical_text(text, canonical):
    assert parse_avro(text).canonical == canonical


def test_normalized_qualifies_every_name():
    a = parse_avro('{"type":"record","name":"R","namespace":"n","fields":[{"name":"x","type":'
                   '{"type":"enum","name":"E","symbols":["A"]}}]}')
    b = parse_avro('{"type":"record","name":"n.R","fields":[{"name":"x","type":'
                   '{"type":"enum","name":"n.E","symbols":["A"]}}]}')
    assert a.canonical == b.canonical     # Avro-Java's toString already agrees
    assert a.normalized == b.normalized == (
        '{"type":"record","name":"n.R","fields":[{"name":"x","type":{"type":"enum",'
        '"name":"n.E","symbols":["A"]}}]}')


@pytest.mark.parametrize("text,needle", [
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}', "nope"),
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}',
     "Default"),
    ('{"type":"enum","name":"E","symbols":["A","A"]}', "unique"),
    ('{"type":"record","name":"1R","fields":[]}', "invalid name"),
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"int"},'
     '{"name":"a","type":"int"}]}', "twice"),
    ('{"type":"record","name":"R"', "not JSON"),
    ('{"type":"fixed","name":"F"}', "size"),
])
def test_invalid_schemas_are_refused_with_the_reason(text, needle):
    with pytest.raises(AvroSchemaError, match=needle):
        parse_avro(text)


def test_referenced_types_are_named_not_inlined():
    ref = parse_avro('{"type":"record","name":"com.x.Address","fields":[{"name":"city",'
                     '"type":"string"}]}')
    main = parse_avro('{"type":"record","name":"com.x.User","fields":[{"name":"home",'
                      '"type":"com.x.Address"}]}', [ref])
    assert main.canonical == ('{"type":"record","name":"User","namespace":"com.x","fields":'
                              '[{"name":"home","type":"Address"}]}')
    with pytest.raises(AvroSchemaError):
        parse_avro('{"type":"record","name":"com.x.User","fields":[{"name":"home",'
                   '"type":"com.x.Address"}]}')
