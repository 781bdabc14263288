"""The rewrite tables name fields that exist in gregor's message schemas at every version, and
every API's whole-request error response encodes and decodes with its error in place."""
from __future__ import annotations

import pytest

from gregor.protocol import messages
from gregor.testing import rewrite

E = 6      # NOT_LEADER_OR_FOLLOWER


def _fields(fields, version):
    return {f.name: f for f in fields if f.versions[0] <= version <= f.versions[1]}


def _level_ok(req_fields, rsp_fields, level, version):
    req = _fields(req_fields, version)
    rsp = _fields(rsp_fields, version)
    assert level.req in req, f"request has no {level.req} at v{version}"
    assert level.rsp in rsp, f"response has no {level.rsp} at v{version}"
    rf = req[level.req]
    if level.req_key is None:
        assert rf.type.startswith("[]") and rf.fields is None
        inner_req = None
    else:
        assert level.req_key in _fields(rf.fields, version), (level.req_key, version)
        inner_req = rf.fields
    assert level.rsp_key in _fields(rsp[level.rsp].fields, version), (level.rsp_key, version)
    return inner_req, rsp[level.rsp].fields


@pytest.mark.parametrize("key", sorted(rewrite._TABLES))
def test_tables_match_the_schemas(key):
    api = messages.APIS[key]
    for v in range(api.valid[0], api.valid[1] + 1):
        t = rewrite.table(key, v)
        req, rsp = api.request, api.response
        if t.outer is not None:
            req, rsp = _level_ok(req, rsp, t.outer, v)
        req, rsp = _level_ok(req, rsp, t.topics, v)
        if t.parts is not None:
            _req, rsp = _level_ok(req, rsp, t.parts, v)
        assert t.error in _fields(rsp, v), f"{api.name} v{v}: no {t.error}"


def _sample(fields, version, depth=0):
    """A request body naming one entity per array (topic 't', partition 0, group 'g')."""
    out = {}
    for f in _fields(fields, version).values():
        if f.type == "[]":
            out[f.name] = [_sample(f.fields, version, depth + 1)]
        elif f.type == "struct":
            out[f.name] = _sample(f.fields, version, depth + 1)
        elif f.type == "[]int32":
            out[f.name] = [0]
        elif f.type == "[]string":
            out[f.name] = ["g"]
        elif f.type == "string":
            out[f.name] = "t"
        elif f.type == "uuid":
            out[f.name] = bytes(range(16))
        elif f.type in ("int32", "int64", "int16", "int8"):
            out[f.name] = 0
    return out


def _codes(value):
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("error_code", "partition_error_code"):
                yield v
            else:
                yield from _codes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _codes(v)


@pytest.mark.parametrize("key", sorted(k for k in messages.APIS if k != 3))
def test_every_api_answers_a_whole_request_error(key):
    api = messages.APIS[key]
    for v in range(api.valid[0], api.valid[1] + 1):
        body = _sample(api.request, v)
        resp = rewrite.whole_error(key, v, body, E)
        codec = api.response_codec(v)
        decoded = codec.decode(codec.encode(resp))
        assert E in set(_codes(decoded)), f"{api.name} v{v}: {decoded}"


def test_without_and_merge_keep_the_other_partitions():
    t = rewrite.table(0, 9)
    body = {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": b"x"},
                                         {"index": 1, "records": b"y"}]},
        {"name": "b", "partition_data": [{"index": 0, "records": b"z"}]}]}
    faulted = {(None, "a", 0): E, (None, "b", 0): E}
    kept, left = rewrite.without(t, body, faulted)
    assert left and kept["topic_data"] == [
        {"name": "a", "partition_data": [{"index": 1, "records": b"y"}]}]
    assert body["topic_data"][0]["partition_data"][0]["index"] == 0     # the original stays
    merged = rewrite.merge(t, {"responses": [{"name": "a", "partition_responses": [
        {"index": 1, "error_code": 0, "base_offset": 7}]}]}, faulted)
    got = {(r["name"], p["index"]): p["error_code"] for r in merged["responses"]
           for p in r["partition_responses"]}
    assert got == {("a", 1): 0, ("a", 0): E, ("b", 0): E}
    _kept, left = rewrite.without(t, body, {**faulted, (None, "a", 1): E})
    assert not left
