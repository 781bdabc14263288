"""The REST API over HTTP: routes, Confluent's error bodies, negotiation, limits."""
import json

V1 = "application/vnd.schemaregistry.v1+json"

AVRO = '{"type":"record","name":"H","fields":[{"name":"a","type":"int"}]}'


def test_register_get_lookup_and_by_id(http):
    st, body, headers = http.call("POST", "/subjects/http-a-value/versions?normalize=False",
                                  {"schema": AVRO, "schemaType": "AVRO", "references": []})
    assert st == 200 and isinstance(body["id"], int)
    assert headers["content-type"] == V1
    sid = body["id"]
    st, got, _ = http.call("GET", f"/schemas/ids/{sid}")
    assert st == 200 and got == {"schema": AVRO}
    st, got, _ = http.call("GET", f"/schemas/ids/{sid}/versions")
    assert {"subject": "http-a-value", "version": 1} in got
    st, got, _ = http.call("GET", "/subjects/http-a-value/versions/-1")
    assert got == {"subject": "http-a-value", "version": 1, "id": sid, "schema": AVRO}
    st, got, _ = http.call("GET", "/subjects/http-a-value/versions/latest/schema")
    assert got == json.loads(AVRO)
    st, got, _ = http.call("POST", "/subjects/http-a-value?normalize=true&deleted=false",
                           {"schema": AVRO})
    assert st == 200 and got["id"] == sid and got["version"] == 1
    assert http.call("GET", "/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]
    # a subject spelled with a slash travels as %2F
    st, body, _ = http.call("POST", "/subjects/team%2Forders/versions", {"schema": AVRO})
    assert st == 200 and body["id"] == sid
    assert "team/orders" in http.call("GET", "/subjects")[1]


def test_error_bodies_and_codes(http):
    st, body, _ = http.call("GET", "/subjects/never-there/versions")
    assert (st, body["error_code"]) == (404, 40401) and "never-there" in body["message"]
    http.call("POST", "/subjects/http-b/versions", {"schema": AVRO})
    st, body, _ = http.call("GET", "/subjects/http-b/versions/abc")
    assert (st, body["error_code"]) == (422, 42202)
    st, body, _ = http.call("POST", "/subjects/http-b/versions", {"schema": "{nope"})
    assert (st, body["error_code"]) == (422, 42201) and body["message"].startswith(
        "Invalid schema")
    st, body, _ = http.call("PUT", "/config", {"compatibility": "SOMETIMES"})
    assert (st, body["error_code"]) == (422, 42203)
    st, body, _ = http.call("GET", "/schemas/ids/987654")
    assert (st, body["error_code"]) == (404, 40403)
    st, body, _ = http.call("GET", "/config/http-b")
    assert (st, body["error_code"]) == (404, 40408)
    st, body, _ = http.call("GET", "/config/http-b?defaultToGlobal=true")
    assert st == 200 and body == {"compatibilityLevel": "BACKWARD"}
    st, body, _ = http.call("GET", "/mode/http-b")
    assert (st, body["error_code"]) == (404, 40409)
    st, body, _ = http.call("GET", "/associations/resources/-/orders?resourceType=topic")
    assert st == 404
    st, body, _ = http.call("GET", "/no/such/route")
    assert st == 404 and "error_code" in body
    st, body, _ = http.call("POST", "/subjects/http-b/versions", raw=b"{not json")
    assert st == 400 and body["error_code"] == 400


def test_content_negotiation(http):
    st, _, headers = http.call("GET", "/subjects", headers={"Accept": "application/json"})
    assert st == 200 and headers["content-type"] == "application/json"
    st, _, headers = http.call("GET", "/subjects", headers={"Accept": "*/*"})
    assert st == 200 and headers["content-type"] == V1
    st, body, _ = http.call("GET", "/subjects", headers={"Accept": "text/html"})
    assert st == 406 and body["error_code"] == 406
    st, body, _ = http.call("POST", "/subjects/neg/versions", {"schema": AVRO},
                            headers={"Content-Type": "text/plain"})
    assert st == 415 and body["error_code"] == 415
    assert http.call("GET", "/subjects/neg/versions")[0] == 404      # nothing stored


def test_body_too_large_is_refused_before_it_is_read(http, registry):
    import socket
    limit = registry.registry.max_body
    with socket.create_connection((http.host, http.port), timeout=60) as s:
        # only the headers go: the answer must come from Content-Length alone
        s.sendall(f"POST /subjects/big/versions HTTP/1.1\r\nHost: x\r\nContent-Type: {V1}"
                  f"\r\nContent-Length: {limit + 1}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["error_code"] == 413
    assert http.call("GET", "/subjects/big/versions")[0] == 404


def test_boolean_spellings_and_limits(http):
    for i in range(3):
        http.call("POST", f"/subjects/lim-{i}/versions", {"schema": '"string"'})
    st, names, _ = http.call("GET", "/subjects?deleted=False&subject=lim-&offset=1&limit=1")
    assert st == 200 and names == ["lim-1"]
    st, names, _ = http.call("GET", "/subjects?subjectPrefix=lim-&limit=-1")
    assert names == ["lim-0", "lim-1", "lim-2"]
    http.call("DELETE", "/subjects/lim-2")
    assert http.call("GET", "/subjects?deletedOnly=true&subject=lim-")[1] == ["lim-2"]
    assert http.call("GET", "/subjects?deleted_only=True&subject=lim-")[1] == ["lim-2"]


def test_hostile_nesting_gets_typed_errors(http):
    deep = "[" * 50_000 + "]" * 50_000
    st, body, _ = http.call("POST", "/subjects/deep/versions", {"schema": deep})
    assert (st, body["error_code"]) == (422, 42201)
    st, body, _ = http.call("POST", "/subjects/deep/versions",
                            raw=b'{"schema":' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert (st, body["error_code"]) == (400, 400)
    st, body, _ = http.call("POST", "/subjects/deep/versions",
                            {"schema": deep, "schemaType": "JSON"})
    assert (st, body["error_code"]) == (422, 42201)
    assert http.call("GET", "/subjects/deep/versions")[0] == 404
    # the connection-level parser refuses garbage with a 400 and closes
    import socket
    with socket.create_connection((http.host, http.port), timeout=60) as s:
        s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        assert s.recv(1000).startswith(b"HTTP/1.1 400")
