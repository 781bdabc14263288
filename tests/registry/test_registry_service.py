"""Confluent's id, version, delete, config and mode rules, on the sans-I/O service."""
import pytest

from gregor.registry.errors import RegistryError
from gregor.registry.service import RegistryService
from gregor.registry.state import RegistryState

A1 = '{"type":"record","name":"U","fields":[{"name":"a","type":"int"}]}'
A2 = ('{"type":"record","name":"U","fields":[{"name":"a","type":"int"},'
      '{"name":"b","type":"string","default":""}]}')
A_BAD = ('{"type":"record","name":"U","fields":[{"name":"a","type":"int"},'
         '{"name":"c","type":"string"}]}')


@pytest.fixture
def svc():
    state = RegistryState()
    log = []

    def write(recs):
        for k, v in recs:
            log.append((k, v))
            state.apply(k, v, len(log) - 1)
    s = RegistryService(state, write)
    s.log = log
    return s


def code(fn, *args, **kw):
    with pytest.raises(RegistryError) as e:
        fn(*args, **kw)
    return e.value.code


def test_ids_are_global_and_reregistration_idempotent(svc):
    assert svc.register("a", {"schema": A1}) == 1
    assert svc.register("a", {"schema": A1.replace(",", ", ")}) == 1   # same canonical text
    assert svc.register("b", {"schema": A1}) == 1                      # shared id
    assert svc.register("a", {"schema": A2}) == 2
    assert svc.versions("a") == [1, 2] and svc.versions("b") == [1]
    # an older schema re-posted stays an old version, it does not become latest
    assert svc.register("a", {"schema": A1}) == 1
    assert svc.get_version("a", "latest").version == 2
    assert svc.get_version("a", "-1").id == 2
    assert len(svc.log) == 3


def test_incompatible_is_409_and_nothing_is_written(svc):
    svc.register("a", {"schema": A1})
    before = len(svc.log)
    with pytest.raises(RegistryError) as e:
        svc.register("a", {"schema": A_BAD})
    assert (e.value.status, e.value.code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in e.value.message
    assert len(svc.log) == before
    svc.set_config("a", {"compatibility": "NONE"})
    assert svc.register("a", {"schema": A_BAD}) == 2


def test_soft_then_hard_delete_rules(svc):
    svc.register("a", {"schema": A1})
    svc.register("a", {"schema": A2})
    assert code(svc.delete_version, "a", 1, permanent=True) == 40407
    assert svc.delete_version("a", 1) == 1
    assert code(svc.delete_version, "a", 1) == 40406
    assert svc.versions("a") == [2] and svc.versions("a", deleted=True) == [1, 2]
    assert svc.versions("a", deleted_only=True) == [1]
    assert code(svc.get_version, "a", 1) == 40402
    assert svc.get_version("a", 1, deleted=True).id == 1
    assert svc.state.by_id[1].schema == A1        # still readable by id
    assert code(svc.delete_subject, "a", permanent=True) == 40405
    assert svc.delete_subject("a") == [2]
    assert code(svc.delete_subject, "a") == 40404
    assert svc.subjects() == [] and svc.subjects(deleted=True) == ["a"]
    # a new version is numbered past the soft-deleted ones
    assert svc.register("a", {"schema": A1}) == 1 and svc.versions("a") == [3]
    svc.delete_subject("a")
    assert svc.delete_subject("a", permanent=True) == [1, 2, 3]
    assert code(svc.versions, "a") == 40401
    assert 1 not in svc.state.by_id
    # ids are never handed out again, even once nothing uses them
    assert svc.register("a", {"schema": A2}) == 3 and svc.versions("a") == [1]


def test_references_and_referenced_versions(svc):
    svc.register("addr", {"schema": '{"type":"record","name":"x.Addr","fields":[]}'})
    body = {"schema": '{"type":"record","name":"x.User","fields":[{"name":"h","type":"x.Addr"}]}',
            "references": [{"name": "x.Addr", "subject": "addr", "version": 1}]}
    uid = svc.register("user", body)
    assert svc.state.by_id[uid].references == (("x.Addr", "addr", 1),)
    assert svc.state.referenced_by("addr", 1) == [uid]
    assert code(svc.delete_version, "addr", 1) == 42206
    missing = dict(body, references=[{"name": "x.Addr", "subject": "nope", "version": 1}])
    assert code(svc.register, "user2", missing) == 42201


def test_bad_input_codes(svc):
    assert code(svc.register, "a", {"schema": "{"}) == 42201
    assert code(svc.register, "a", {"schema": A1, "schemaType": "XML"}) == 42201
    assert code(svc.register, "a", {}) == 42201
    assert code(svc.get_version, "a", "1") == 40401
    svc.register("a", {"schema": A1})
    assert code(svc.get_version, "a", "one") == 42202
    assert code(svc.get_version, "a", "0") == 42202
    assert code(svc.get_version, "a", "7") == 40402
    assert code(svc.set_config, None, {"compatibility": "SIDEWAYS"}) == 42203
    assert code(svc.set_mode, None, {"mode": "WRITEONLY"}) == 42204
    assert code(svc.lookup, "a", {"schema": A2}) == 40403
    assert code(svc.lookup, "zz", {"schema": A2}) == 40401


def test_config_and_mode(svc):
    assert svc.get_config() == {"compatibilityLevel": "BACKWARD"}
    assert code(svc.get_config, "s") == 40408
    assert svc.get_config("s", default_to_global=True) == {"compatibilityLevel": "BACKWARD"}
    assert svc.set_config("s", {"compatibility": "full"}) == {"compatibility": "FULL"}
    assert svc.get_config("s") == {"compatibilityLevel": "FULL"}
    assert svc.delete_config("s") == {"compatibilityLevel": "FULL"}
    assert code(svc.get_config, "s") == 40408
    assert svc.get_mode() == {"mode": "READWRITE"}
    assert code(svc.get_mode, "s") == 40409
    svc.set_mode("s", {"mode": "READONLY"})
    assert code(svc.register, "s", {"schema": A1}) == 42205
    svc.delete_mode("s")
    assert svc.register("s", {"schema": A1}) == 1
    assert code(svc.set_mode, None, {"mode": "IMPORT"}) == 42205     # not empty
    svc.set_mode(None, {"mode": "IMPORT"}, force=True)
    assert svc.register("t", {"schema": A2, "id": 50, "version": 4}) == 50
    assert svc.versions("t") == [4]
    assert code(svc.register, "u", {"schema": A1, "id": 50}) == 42205  # id taken by A2


def test_compatibility_test_endpoint_semantics(svc):
    svc.register("a", {"schema": A1})
    assert svc.test_compatibility("a", "latest", {"schema": A2}) == {"is_compatible": True}
    out = svc.test_compatibility("a", "1", {"schema": A_BAD}, verbose=True)
    assert out["is_compatible"] is False and out["messages"]
    assert svc.test_compatibility("nope", "latest", {"schema": A1}) == {"is_compatible": True}
    assert code(svc.test_compatibility, "a", "9", {"schema": A1}) == 40402


def test_normalize_finds_versions_registered_without_it(svc):
    # JSON Schema keeps key order in its canonical text; normalize sorts keys
    given = {"schemaType": "JSON", "schema": '{"type":"object","title":"T"}'}
    reordered = {"schemaType": "JSON", "schema": '{"title":"T","type":"object"}'}
    sid = svc.register("n", given)
    assert code(svc.lookup, "n", reordered) == 40403
    assert svc.lookup("n", reordered, normalize=True).id == sid
    assert svc.register("n", reordered, normalize=True) == sid
    assert svc.versions("n") == [1]
