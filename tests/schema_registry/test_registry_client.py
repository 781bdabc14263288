"""gregor.schema_registry.SchemaRegistryClient over a scripted transport: the requests it
sends (paths, headers, bodies), its caches, retries and typed errors."""
import base64
import json

import pytest

from gregor.schema_registry import (IncompatibleSchemaError, RegistryUnavailableError, Schema,
                                    SchemaNotFoundError, SchemaRegistryClient,
                                    SchemaRegistryError, SubjectNotFoundError)


class Scripted:
    """Answers requests from a list of (status, body) and records what was asked."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = []

    def __call__(self, method, url, body, headers, timeout):
        self.calls.append((method, url, json.loads(body) if body else None, headers))
        status, reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return status, reply if isinstance(reply, bytes) else json.dumps(reply).encode()


def client(t, **conf):
    return SchemaRegistryClient({"url": "http://127.0.0.1:1", "retries.wait.ms": 0, **conf},
                                transport=t)


def test_register_sends_confluent_body_and_caches_the_id():
    t = Scripted((200, {"id": 7}))
    c = client(t)
    s = Schema('{"type":"string"}')
    assert c.register_schema("orders-value", s) == 7
    assert c.register_schema("orders-value", s) == 7       # cached: one request
    (method, url, body, headers), = t.calls
    assert method == "POST"
    assert url == "http://127.0.0.1:1/subjects/orders-value/versions?normalize=false"
    assert body == {"schema": '{"type":"string"}', "schemaType": "AVRO", "references": []}
    assert headers["Content-Type"] == "application/vnd.schemaregistry.v1+json"
    assert "application/vnd.schemaregistry.v1+json" in headers["Accept"]
    assert c.get_schema(7) == s                            # learnt from the registration


def test_get_schema_by_id_is_cached_and_subject_names_are_quoted():
    t = Scripted((200, {"schema": "\"int\""}), (200, {"subject": "a/b", "id": 3, "version": 2,
                                                       "schema": "\"long\""}))
    c = client(t)
    assert c.get_schema(5).schema_str == '"int"'
    assert c.get_schema(5).schema_type == "AVRO"
    reg = c.get_version("a/b", 2)
    assert (reg.schema_id, reg.version, reg.subject) == (3, 2, "a/b")
    assert c.get_version("a/b", 2) is reg
    assert [u for _, u, _, _ in t.calls] == ["http://127.0.0.1:1/schemas/ids/5",
                                             "http://127.0.0.1:1/subjects/a%2Fb/versions/2"]


def test_latest_version_is_kept_for_the_ttl():
    now = [0.0]
    t = Scripted(*[(200, {"subject": "s", "id": i, "version": i, "schema": '"int"'})
                   for i in (1, 2)])
    c = SchemaRegistryClient({"url": "http://h:1", "cache.latest.ttl.sec": 10}, transport=t,
                             clock=lambda: now[0])
    assert c.get_latest_version("s").schema_id == 1
    now[0] = 9.9
    assert c.get_latest_version("s").schema_id == 1
    now[0] = 10.0
    assert c.get_latest_version("s").schema_id == 2
    assert len(t.calls) == 2


@pytest.mark.parametrize("status, code, cls", [
    (404, 40401, SubjectNotFoundError), (404, 40403, SchemaNotFoundError),
    (409, 409, IncompatibleSchemaError), (409, 40901, IncompatibleSchemaError)])
def test_error_codes_become_typed_exceptions(status, code, cls):
    c = client(Scripted((status, {"error_code": code, "message": "Subject 's' not found."})))
    with pytest.raises(cls) as e:
        c.get_latest_version("s")
    assert (e.value.http_status, e.value.error_code) == (status, code)
    assert "Subject 's' not found." in str(e.value)


def test_retriable_statuses_are_retried_then_reported():
    t = Scripted((503, {"error_code": 50003, "message": "forwarding"}), (200, {"id": 1}))
    assert client(t).register_schema("s", Schema('"int"')) == 1
    t = Scripted(*[(500, {"error_code": 50001, "message": "store"})] * 2)
    with pytest.raises(RegistryUnavailableError, match="store"):
        client(t, **{"max.retries": 1}).register_schema("s", Schema('"int"'))


def test_a_non_json_error_body_keeps_the_status():
    c = client(Scripted((404, b"<html>nope</html>")))
    with pytest.raises(SchemaRegistryError) as e:
        c.get_schema(1)
    assert (e.value.http_status, e.value.error_code) == (404, -1)


def test_second_url_is_tried_when_the_first_refuses_connections():
    t = Scripted((0, ConnectionRefusedError("refused")), (200, {"schema": '"int"'}))
    c = SchemaRegistryClient({"url": "http://a:1,http://b:2"}, transport=t)
    assert c.get_schema(1).schema_str == '"int"'
    assert [u.split("/")[2] for _, u, _, _ in t.calls] == ["a:1", "b:2"]


def test_basic_auth_from_user_info_or_url():
    t = Scripted((200, {"schema": '"int"'}), (200, {"schema": '"int"'}))
    client(t, **{"basic.auth.user.info": "alice:s3:cret"}).get_schema(1)
    SchemaRegistryClient({"url": "http://bob:pw@h:1"}, transport=t).get_schema(1)
    auths = [h["Authorization"] for _, _, _, h in t.calls]
    assert auths == ["Basic " + base64.b64encode(b"alice:s3:cret").decode(),
                     "Basic " + base64.b64encode(b"bob:pw").decode()]
    assert t.calls[1][1] == "http://h:1/schemas/ids/1"        # credentials not in the URL


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="'url' is required"):
        SchemaRegistryClient({})
    with pytest.raises(ValueError, match="unknown schema registry config"):
        SchemaRegistryClient({"url": "http://h:1", "bogus": 1})
    with pytest.raises(ValueError, match="http://"):
        SchemaRegistryClient({"url": "mock://x"})
