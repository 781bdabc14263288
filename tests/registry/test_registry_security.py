"""The REST API's own security: HTTP basic auth with a read-only role, and TLS."""
import base64
import http.client
import json
import ssl

import pytest

from gregor.registry.auth import AuthConfigError, parse_users, server_tls_context
from gregor.registry.election_protocol import Assignment, Identity, assign
from gregor.registry.server import RegistryThread

V1 = "application/vnd.schemaregistry.v1+json"
USERS = "alice: s3cret, admin\nreader: pw, readonly\n"


def call(conn, method, path, body=None, user=None):
    headers = {"Accept": V1, "Content-Type": V1}
    if user:
        headers["Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers=headers)
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read() or b"null"), resp.getheader("www-authenticate")


def test_basic_auth_and_readonly_role(broker):
    with RegistryThread({"bootstrap.servers": broker.bootstrap_servers}, topic="_schemas_auth",
                        users=parse_users(USERS)) as r:
        port = int(r.url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        st, body, challenge = call(conn, "GET", "/subjects")
        assert (st, body["error_code"]) == (401, 401) and challenge.startswith("Basic")
        assert call(conn, "GET", "/subjects", user="alice:wrong")[0] == 401
        st, body, _ = call(conn, "POST", "/subjects/s/versions", {"schema": '"int"'},
                           user="alice:s3cret")
        assert st == 200 and body["id"] >= 1
        assert call(conn, "GET", "/subjects", user="reader:pw")[:2] == (200, ["s"])
        st, body, _ = call(conn, "POST", "/subjects/s/versions", {"schema": '"long"'},
                           user="reader:pw")
        assert (st, body["error_code"]) == (403, 40301)
        # lookups and compatibility tests are reads
        assert call(conn, "POST", "/subjects/s", {"schema": '"int"'}, user="reader:pw")[0] == 200
        # confluent-kafka's client with basic.auth.user.info
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        admin = SchemaRegistryClient({"url": r.url, "basic.auth.user.info": "alice:s3cret"})
        assert admin.register_schema("ck", Schema('"string"')) >= 1
        reader = SchemaRegistryClient({"url": r.url, "basic.auth.user.info": "reader:pw"})
        assert "ck" in reader.get_subjects()
        with pytest.raises(SchemaRegistryError) as e:
            reader.register_schema("ck2", Schema('"bytes"'))
        assert (e.value.http_status_code, e.value.error_code) == (403, 40301)


def test_users_file_errors():
    with pytest.raises(AuthConfigError, match="no password"):
        parse_users("bob:\n")
    with pytest.raises(AuthConfigError, match="hashed"):
        parse_users("bob: MD5:abc\n")
    with pytest.raises(AuthConfigError, match="expected"):
        parse_users("just a line\n")


def test_tls(broker, tmp_path):
    trustme = pytest.importorskip("trustme", reason="trustme is a test dependency")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_pem, key_pem = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(cert_pem)
    cert.private_key_pem.write_to_path(key_pem)
    ctx = server_tls_context(str(cert_pem), str(key_pem))
    with RegistryThread({"bootstrap.servers": broker.bootstrap_servers}, topic="_schemas_tls",
                        ssl_context=ctx) as r:
        assert r.url.startswith("https://")
        port = int(r.url.rsplit(":", 1)[1])
        client_ctx = ssl.create_default_context()
        ca.configure_trust(client_ctx)
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=client_ctx)
        assert call(conn, "GET", "/schemas/types")[:2] == (200, ["AVRO", "JSON", "PROTOBUF"])
        plain = http.client.HTTPSConnection("127.0.0.1", port, timeout=60,
                                            context=ssl.create_default_context())
        with pytest.raises(ssl.SSLError):
            call(plain, "GET", "/schemas/types")          # an untrusted certificate


def test_election_assignment_rules():
    a = Identity.from_url("http://10.0.0.2:8081")
    b = Identity.from_url("http://10.0.0.1:8081")
    c = Identity.from_url("http://10.0.0.0:8081", eligible=False)
    got = assign({"m-a": a, "m-b": b, "m-c": c}, None)
    assert (got.error, got.leader_member) == (0, "m-b")              # smallest eligible URL
    assert assign({"m-a": a, "m-b": b}, a.url).leader_member == "m-a"   # sticky
    assert assign({"m-a": a, "m-x": a}, None).error == 1               # duplicate URLs
    assert assign({"m-c": c}, None).leader is None
    assert Identity.decode(a.encode()) == a
    assert json.loads(a.encode()) == {"version": 1, "host": "10.0.0.2", "port": 8081,
                                      "master_eligibility": True, "scheme": "http"}
    round_trip = Assignment.decode(got.encode())
    assert round_trip == got and json.loads(got.encode())["master"] == "m-b"


def test_registry_on_a_sasl_cluster(tmp_path):
    from tests.support.broker import BrokerProcess
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'user_registry="reg-secret";')
    settings = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
                "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "registry", "sasl.password": "reg-secret"}
    b = BrokerProcess(tmp_path / "data", settings=settings)
    b.start()
    try:
        with RegistryThread({"bootstrap.servers": b.bootstrap, **sasl}) as r:
            assert r.registry.service.register("sasl-value", {"schema": '"int"'}) == 1
            assert r.registry.election.is_leader()
        bad = RegistryThread({"bootstrap.servers": b.bootstrap,
                              **dict(sasl, **{"sasl.password": "wrong"})})
        with pytest.raises(Exception, match="(?i)auth"):
            bad.start(timeout=60)
        bad.stop()
    finally:
        b.stop()
