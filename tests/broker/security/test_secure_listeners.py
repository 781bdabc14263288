"""A broker process with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners, seen from the
wire (mirrors Kafka's SaslAuthenticatorTest over real connections): what is answered, what is
closed, who gets in. Real clients are in tests/interop/test_interop_security.py."""
from __future__ import annotations

import re
import ssl
import struct
import time

import pytest

from gregor.protocol import messages
from gregor.protocol.errors import ErrorCode
from gregor.security.scram import SCRAM_SHA_256
from tests.support.sasl_wire import authenticate, client_context, connect, handshake, login
from tests.support.secure_broker import USERS, start_secure_broker

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL " \
          "mechanism {}"


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(
        tmp_path_factory.mktemp("secure"), extra_args=["--log-level", "DEBUG"],
        extra_listeners=["REAUTH"],
        **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
           "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT",
           "listener.name.reauth.sasl.enabled.mechanisms": "SCRAM-SHA-256",
           "listener.name.reauth.connections.max.reauth.ms": "1500",
           "sasl.server.max.receive.size": "4096"})
    try:
        yield broker
    finally:
        broker.stop()


def port(b, name):
    return b.listeners[name]


def tls(b, cert=None):
    return client_context(b.pki, cert)


def api_versions(c) -> dict:
    body = c.request("ApiVersions", 0, {})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}


def metadata_works(c) -> bool:
    return c.request("Metadata", 1, {"topics": None})["brokers"] != []


def wait_for_log(b, pattern: str, timeout: float = 10.0) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, b.output())
        if m:
            return m
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} not in the broker log:\n{b.output()[-3000:]}")


# -- every listener -------------------------------------------------------------------------

@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_sasl_apis_on_listeners_without_sasl_answer_illegal_sasl_state(b, listener):
    with connect(port(b, listener), tls(b) if listener == "SSL" else None) as c:
        versions = api_versions(c)
        assert versions[17] == (0, 1) and versions[36] == (0, 2)
        assert versions[50] == (0, 0) and versions[51] == (0, 0)
        assert handshake(c, "PLAIN") == {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                                         "mechanisms": []}
        body = authenticate(c, b"\0alice\0alice-secret")
        assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert metadata_works(c)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_login_then_requests_work(b, listener, mechanism):
    with connect(port(b, listener), tls(b) if listener == "SASL_SSL" else None) as c:
        assert api_versions(c)[17] == (0, 1)
        body = login(c, mechanism, "bob", USERS["bob"])
        assert body["error_code"] == 0 and body["session_lifetime_ms"] == 0
        assert metadata_works(c)
        # after authentication the broker's APIs answer the SASL requests
        assert handshake(c, mechanism)["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert metadata_works(c)


def test_user_names_with_comma_and_equals(b):
    with connect(port(b, "PLAINTEXT")) as c:
        body = c.request("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [
            {"name": "o,d=d", "mechanism": 1, "iterations": 4096, "salt": b"s" * 16,
             "salted_password": SCRAM_SHA_256.salted_password("pw", b"s" * 16, 4096)}]})
        assert body["results"] == [{"user": "o,d=d", "error_code": 0, "error_message": None}]
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        assert login(c, "SCRAM-SHA-256", "o,d=d", "pw")["error_code"] == 0
    wait_for_log(b, r"authenticated as User:o,d=d \(SASL/SCRAM-SHA-256\)")


# -- refusals -------------------------------------------------------------------------------

GATED = sorted(k for k in messages.APIS if k not in (17, 18))


def test_no_api_is_answered_before_authentication(b):
    """testDisallowedKafkaRequestsBeforeAuthentication, for every API key the broker knows:
    no answer, the connection closed; a good connection still works afterwards."""
    for key in GATED:
        api = messages.APIS[key]
        with connect(port(b, "SASL_PLAINTEXT")) as c:
            c.send_raw(_frame(key, api.valid[0]))
            assert c.is_closed(), f"{api.name} before authentication: connection stayed open"
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        assert login(c, "PLAIN", "alice", USERS["alice"])["error_code"] == 0


def _frame(key: int, version: int, corr: int = 9) -> bytes:
    body = struct.pack(">hhi", key, version, corr) + b"\x00\x04test" + b"\x00" * 24
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize("key", [3, 0, 1, 19, 20, 32, 51])
def test_another_api_after_handshake_v1_answers_illegal_sasl_state_and_closes(b, key):
    api = messages.APIS[key]
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        handshake(c, "PLAIN")
        c.send(api.name, api.valid[0], {})
        corr, body = c.receive(api.name, api.valid[0])
        if any(f.name == "error_code" and f.versions[0] <= api.valid[0] <= f.versions[1]
               for f in api.response):
            assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert c.is_closed()


def test_second_api_versions_closes(b):
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        api_versions(c)
        c.send("ApiVersions", 0, {})
        assert c.is_closed()


def test_unsupported_mechanism(b):
    with connect(port(b, "SASL_SSL"), tls(b)) as c:
        assert handshake(c, "GSSAPI") == {
            "error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]}
        assert c.is_closed()


def test_mechanism_disabled_on_a_listener(b):
    with connect(port(b, "REAUTH")) as c:
        assert handshake(c, "PLAIN") == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                         "mechanisms": ["SCRAM-SHA-256"]}


@pytest.mark.parametrize("mechanism, user, password, text", [
    ("PLAIN", "alice", "wrong-password-1", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", "wrong-password-2", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong-password-3", GENERIC.format("SCRAM-SHA-256")),
    ("SCRAM-SHA-512", "mallory", "wrong-password-4", GENERIC.format("SCRAM-SHA-512")),
])
def test_failed_logins_get_kafkas_text_and_nobody_gets_in(b, mechanism, user, password, text):
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        started = time.monotonic()
        body = login(c, mechanism, user, password)
        assert (body["error_code"], body["error_message"]) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED, text)
        c.send("Metadata", 1, {"topics": None})      # never answered: the gate is shut
        assert c.is_closed()
        assert time.monotonic() - started >= 0.1 * 0.9   # closed after the failure delay
    wait_for_log(b, f"failed SASL/{mechanism} authentication")
    assert password not in b.output()


def test_oauthbearer_session_lasts_as_long_as_the_token(b):
    import base64
    import json

    def part(doc):
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
    now = time.time()
    tok = f"{part({'alg': 'none'})}.{part({'sub': 'oscar', 'iat': now, 'exp': now + 30})}."
    with connect(port(b, "SASL_SSL"), tls(b)) as c:
        assert handshake(c, "OAUTHBEARER")["error_code"] == 0
        body = authenticate(c, f"n,,\x01auth=Bearer {tok}\x01\x01".encode())
        assert body["error_code"] == 0 and 25_000 < body["session_lifetime_ms"] <= 30_000
        assert metadata_works(c)
    expired = f"{part({'alg': 'none'})}.{part({'sub': 'oscar', 'exp': now - 1})}."
    with connect(port(b, "SASL_SSL"), tls(b)) as c:
        handshake(c, "OAUTHBEARER")
        body = authenticate(c, f"n,,\x01auth=Bearer {expired}\x01\x01".encode())
        assert body["error_code"] == 0 and body["auth_bytes"] == b'{"status":"invalid_token"}'
        body = authenticate(c, b"\x01")
        assert (body["error_code"], body["error_message"]) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED, '{"status":"invalid_token"}')
        assert c.is_closed()


def test_legacy_v0_framing(b):
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        assert handshake(c, "PLAIN", version=0)["error_code"] == 0
        token = b"alice\0alice\0alice-secret"
        c.send_raw(struct.pack(">i", len(token)) + token)
        assert c.read_frame() == b""
        assert metadata_works(c)


def test_oversize_frame_before_authentication_is_closed(b):
    """sasl.server.max.receive.size (4096 here) bounds what an unauthenticated client sends."""
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        c.send_raw(struct.pack(">i", 5000) + b"\0" * 100)
        assert c.is_closed()
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        handshake(c, "PLAIN")
        c.send("SaslAuthenticate", 1, {"auth_bytes": b"\0" * 5000})
        assert c.is_closed()
    with connect(port(b, "SASL_PLAINTEXT")) as c:        # and the limit is lifted after it
        login(c, "PLAIN", "alice", USERS["alice"])
        body = c.request("Metadata", 1, {"topics": [{"name": "x" * 200}] * 40})
        assert len(body["topics"]) >= 1


def test_tls_bytes_on_a_sasl_plaintext_listener_are_named_in_the_log(b):
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        c.send_raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 32)
        assert c.is_closed()
    wait_for_log(b, "what looks like a TLS handshake; listener SASL_PLAINTEXT is SASL_PLAINTEXT")


# -- TLS and client certificates ----------------------------------------------------------------

def test_mtls_principal_is_the_certificate_dn(b):
    cert = b.pki.client("carol", O="Acme", OU="Eng")
    with connect(port(b, "SSL"), tls(b, cert)) as c:
        assert metadata_works(c)
    wait_for_log(b, r"principal User:CN=carol,OU=Eng,O=Acme")


def test_ssl_without_a_client_certificate_is_anonymous_when_only_requested(b):
    with connect(port(b, "SSL"), tls(b)) as c:
        assert metadata_works(c)


def test_sasl_ssl_ignores_the_unprefixed_client_auth(b):
    """ssl.client.auth=requested is set unprefixed: SASL_SSL does not ask for a certificate."""
    with connect(port(b, "SASL_SSL"), tls(b)) as c:
        assert c.sock.getpeercert()["subject"]
        assert login(c, "SCRAM-SHA-512", "alice", USERS["alice"])["error_code"] == 0


def test_a_client_that_does_not_trust_the_broker_fails_the_handshake(b):
    with pytest.raises(ssl.SSLCertVerificationError):
        connect(port(b, "SSL"), ssl.create_default_context())


def test_plaintext_client_on_a_tls_listener_gets_closed(b):
    with connect(port(b, "SSL")) as c:
        c.send("ApiVersions", 0, {})
        assert c.is_closed()
    with connect(port(b, "PLAINTEXT")) as c:
        assert metadata_works(c)


# -- re-authentication (KIP-368) ------------------------------------------------------------

def test_session_lifetime_reauthentication_and_expiry(b):
    with connect(port(b, "REAUTH")) as c:
        body = login(c, "SCRAM-SHA-256", "alice", USERS["alice"])
        assert body["session_lifetime_ms"] == 1500
        assert metadata_works(c)
        started = time.monotonic()
        while time.monotonic() - started < 1.05:      # re-authenticating needs >= 1 s between
            time.sleep(0.05)
        assert login(c, "SCRAM-SHA-256", "alice", USERS["alice"])["session_lifetime_ms"] == 1500
        renewed = time.monotonic()
        assert metadata_works(c)
        while time.monotonic() - renewed < 1.6:       # let the renewed session run out
            time.sleep(0.05)
        c.send("Metadata", 1, {"topics": None})
        assert c.is_closed()
    wait_for_log(b, "after its SASL session expired")


def test_reauthentication_cannot_change_the_principal(b):
    with connect(port(b, "REAUTH")) as c:
        login(c, "SCRAM-SHA-256", "alice", USERS["alice"])
        started = time.monotonic()
        while time.monotonic() - started < 1.05:
            time.sleep(0.05)
        body = login(c, "SCRAM-SHA-256", "bob", USERS["bob"])
        assert body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert body["error_message"] == ("Cannot change principals during re-authentication "
                                         "from User.alice: User.bob")
        assert c.is_closed()


# -- configs and durability --------------------------------------------------------------------

def test_describe_configs_answers_null_for_secrets(b):
    with connect(port(b, "PLAINTEXT")) as c:
        body = c.request("DescribeConfigs", 1, {"resources": [
            {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
            "include_synonyms": True})
    entries = {e["name"]: e for e in body["results"][0]["configs"]}
    for name in ("listener.name.sasl_plaintext.plain.sasl.jaas.config",
                 "listener.name.sasl_ssl.plain.sasl.jaas.config", "ssl.keystore.password",
                 "ssl.key.password", "sasl.jaas.config"):
        assert entries[name]["is_sensitive"] and entries[name]["value"] is None, name
        assert all(s["value"] is None for s in entries[name]["synonyms"])
    assert entries["ssl.keystore.location"]["value"] == str(b.pki.server_pem)
    assert "alice-secret" not in repr(body)


def test_credentials_survive_kill_9(b):
    salt = b"k" * 16
    with connect(port(b, "PLAINTEXT")) as c:
        body = c.request("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [
            {"name": "dora", "mechanism": 1, "iterations": 8192, "salt": salt,
             "salted_password": SCRAM_SHA_256.salted_password("dora-pw", salt, 8192)}]})
        assert body["results"][0]["error_code"] == 0
    b.kill()
    b.start()
    with connect(port(b, "SASL_PLAINTEXT")) as c:
        assert login(c, "SCRAM-SHA-256", "dora", "dora-pw")["error_code"] == 0
    with connect(port(b, "PLAINTEXT")) as c:
        body = c.request("DescribeUserScramCredentials", 0, {"users": [{"name": "dora"}]})
    assert body["results"][0]["credential_infos"] == [{"mechanism": 1, "iterations": 8192}]
    wait_for_log(b, r"authenticated as User:dora")
    # everything both broker processes printed (the harness's own "--- <command>" lines,
    # which carry the test's settings, aside)
    printed = "".join(line for line in b.log_text().splitlines(True)
                      if not line.startswith("--- "))
    assert "authenticated as User:dora" in printed
    for secret in list(USERS.values()) + ["dora-pw"]:
        assert secret not in printed, "a password reached the broker's log"
