"""`_schemas` records byte for byte as Confluent's registry writes them."""
from gregor.registry import records
from gregor.registry.json_text import dumps
from gregor.registry.records import Key, SchemaValue


def test_keys_are_confluents_bytes():
    assert Key("SCHEMA", "orders-value", 3).encode() == \
        b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'
    assert Key("CONFIG", None).encode() == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert Key("CONFIG", "s").encode() == b'{"keytype":"CONFIG","subject":"s","magic":0}'
    assert Key("MODE", "s").encode() == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert Key("DELETE_SUBJECT", "s").encode() == \
        b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert records.noop_record() == (b'{"keytype":"NOOP","magic":0}', None)


def test_schema_value_and_round_trip():
    v = SchemaValue("s", 1, 7, '"string"')
    key, value = records.schema_record(v)
    assert value == b'{"subject":"s","version":1,"id":7,"schema":"\\"string\\"","deleted":false}'
    k = records.decode_key(key)
    assert records.decode_value(k, value) == v
    pv = SchemaValue("p", 2, 8, "AAAA", "PROTOBUF", [{"name": "a.proto", "subject": "a",
                                                      "version": 1}], True)
    _, raw = records.schema_record(pv)
    assert raw == (b'{"subject":"p","version":2,"id":8,"schema":"AAAA","schemaType":"PROTOBUF",'
                   b'"references":[{"name":"a.proto","subject":"a","version":1}],'
                   b'"deleted":true}')


def test_strings_escaped_as_jackson_does():
    # Jackson: UTF-8 as is, short escapes, upper-case hex for other control characters
    assert dumps("é\n\x1f\"\\/") == '"é\\n\\u001F\\"\\\\/"'
    assert Key("SCHEMA", "é", 1).encode() == \
        '{"keytype":"SCHEMA","subject":"é","version":1,"magic":1}'.encode()


def test_unreadable_records_are_skipped_not_fatal():
    from gregor.registry.state import RegistryState
    st = RegistryState()
    st.apply(b"not json", b"{}", 0)
    st.apply(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', b'{"x":1}', 1)
    st.apply(b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}', b"{}", 2)
    assert st.skipped == 3 and st.offset == 2 and not st.subjects
