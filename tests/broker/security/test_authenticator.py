"""Kafka's SASL server state machine (mirrors SaslAuthenticatorTest and
SaslServerAuthenticatorTest), sans-I/O: frames in, outcomes out."""
from __future__ import annotations

import struct

import pytest

from gregor.broker.security.sasl.authenticator import SaslAuthenticator
from gregor.broker.security.sasl.plain import PlainServer
from gregor.broker.security.sasl.scram import ScramServer
from gregor.protocol import messages
from gregor.protocol.errors import ErrorCode
from gregor.protocol.header import decode_response, encode_request
from gregor.security.scram import MECHANISMS, ScramClient, credential_from_password

ENABLED = ["PLAIN", "SCRAM-SHA-256"]
PLAIN_USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM = {(u, "SCRAM-SHA-256"): credential_from_password(MECHANISMS["SCRAM-SHA-256"], pw)
         for u, pw in PLAIN_USERS.items()}


def new_auth(reauth_ms: int = 0, enabled=ENABLED) -> SaslAuthenticator:
    def server(mech):
        if mech == "PLAIN":
            return PlainServer(PLAIN_USERS.get)
        return ScramServer(MECHANISMS[mech], lambda u, m: SCRAM.get((u, m)))
    return SaslAuthenticator(enabled, server, reauth_ms=lambda m: reauth_ms,
                             api_versions_range=(0, 3))


def req(api: str, version: int, body: dict, corr: int = 7) -> bytes:
    return encode_request(messages.api(api), version, corr, "test", body)[4:]


def answer(out, api: str, version: int) -> dict:
    assert out.reply is not None, f"no reply: {out}"
    corr, body = decode_response(messages.api(api), version, out.reply[4:])
    return body


def handshake(a, mech="PLAIN", version=1, now=0.0):
    return a.on_frame(req("SaslHandshake", version, {"mechanism": mech}), now)


def authenticate(a, token: bytes, version=1, now=0.0):
    return a.on_frame(req("SaslAuthenticate", version, {"auth_bytes": token}), now)


def test_plain_over_handshake_v1_and_authenticate():
    a = new_auth()
    assert a.on_frame(req("ApiVersions", 3, {"client_software_name": "x",
                                             "client_software_version": "1"}), 0).passthrough
    body = answer(handshake(a), "SaslHandshake", 1)
    assert body == {"error_code": 0, "mechanisms": ENABLED}
    out = authenticate(a, b"\0alice\0alice-secret")
    body = answer(out, "SaslAuthenticate", 1)
    assert body["error_code"] == 0 and body["auth_bytes"] == b"" and \
        body["session_lifetime_ms"] == 0
    assert a.authenticated and str(a.principal) == "User:alice" and a.expiry is None
    assert a.on_frame(req("Metadata", 1, {"topics": None}), 0).passthrough


@pytest.mark.parametrize("version", [0, 1, 2])
def test_scram_over_every_sasl_authenticate_version(version):
    a = new_auth()
    handshake(a, "SCRAM-SHA-256")
    client = ScramClient(MECHANISMS["SCRAM-SHA-256"], "bob", "bob-secret")
    first = answer(authenticate(a, client.first().encode(), version), "SaslAuthenticate", version)
    final = answer(authenticate(a, client.final(first["auth_bytes"]).encode(), version),
                   "SaslAuthenticate", version)
    client.verify(final["auth_bytes"])
    assert a.authenticated and a.principal.name == "bob"


def test_second_api_versions_closes():
    a = new_auth()
    assert a.on_frame(req("ApiVersions", 0, {}), 0).passthrough
    out = a.on_frame(req("ApiVersions", 0, {}), 0)
    assert out.close and out.reply is None


def test_api_versions_at_an_unknown_version_may_be_retried():
    a = new_auth()
    frame = bytearray(req("ApiVersions", 0, {}))
    struct.pack_into(">h", frame, 2, 99)             # the broker answers UNSUPPORTED_VERSION
    assert a.on_frame(bytes(frame), 0).passthrough
    assert a.on_frame(req("ApiVersions", 0, {}), 0).passthrough
    assert answer(handshake(a), "SaslHandshake", 1)["error_code"] == 0


GATED = sorted(k for k in messages.APIS if k not in (17, 18))


@pytest.mark.parametrize("api_key", GATED, ids=lambda k: messages.APIS[k].name)
def test_every_other_api_before_the_handshake_closes_without_an_answer(api_key):
    a = new_auth()
    api = messages.APIS[api_key]
    frame = struct.pack(">hhi", api_key, api.valid[0], 5) + b"\x00\x04test" + b"\x00" * 16
    out = a.on_frame(frame, 0)
    assert out.close and out.reply is None and not out.passthrough and not a.authenticated


@pytest.mark.parametrize("api_key", [3, 0, 1, 19, 32], ids=lambda k: messages.APIS[k].name)
def test_another_api_after_handshake_v1_gets_illegal_sasl_state_then_close(api_key):
    a = new_auth()
    handshake(a)
    api = messages.APIS[api_key]
    version = api.valid[0]
    out = a.on_frame(req(api.name, version, {}), 0)
    body = answer(out, api.name, version)
    assert out.close and not out.passthrough and not a.authenticated
    top_level_error = any(f.name == "error_code" and f.versions[0] <= version <= f.versions[1]
                          for f in api.response)
    if top_level_error:
        assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes_after_the_delay():
    a = new_auth()
    out = handshake(a, "GSSAPI")
    assert answer(out, "SaslHandshake", 1) == {
        "error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": ENABLED}
    assert out.close and out.delay


@pytest.mark.parametrize("mech, token, text", [
    ("PLAIN", b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from "
     "username"),
    ("PLAIN", b"garbage", "Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism PLAIN"),
    ("SCRAM-SHA-256", b"n,,n=mallory,r=abc", "Authentication failed during authentication "
     "due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
])
def test_failures_answer_error_58_with_kafkas_text(mech, token, text):
    a = new_auth()
    handshake(a, mech)
    out = authenticate(a, token)
    body = answer(out, "SaslAuthenticate", 1)
    assert (body["error_code"], body["error_message"]) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                           text)
    assert out.close and out.delay and not a.authenticated
    assert "mallory" in out.why or mech == "PLAIN"      # the log says why; the client not
    assert a.on_frame(req("Metadata", 1, {"topics": None}), 0).close


def test_legacy_v0_handshake_uses_raw_tokens():
    a = new_auth()
    assert answer(handshake(a, "PLAIN", 0), "SaslHandshake", 0)["error_code"] == 0
    out = a.on_frame(b"\0alice\0alice-secret", 0)
    assert out.reply == b"\0\0\0\0" and a.authenticated


def test_legacy_v0_scram_and_failure_closes_without_text():
    a = new_auth()
    handshake(a, "SCRAM-SHA-256", 0)
    client = ScramClient(MECHANISMS["SCRAM-SHA-256"], "alice", "alice-secret")
    out = a.on_frame(client.first().encode(), 0)
    server_first = out.reply[4:]
    assert int.from_bytes(out.reply[:4], "big") == len(server_first)
    out = a.on_frame(client.final(server_first).encode(), 0)
    client.verify(out.reply[4:])
    assert a.authenticated
    b = new_auth()
    handshake(b, "PLAIN", 0)
    out = b.on_frame(b"\0alice\0nope", 0)
    assert out.close and out.delay and out.reply is None


def test_non_kafka_bytes_before_the_handshake_close():
    out = new_auth().on_frame(b"\x16\x03\x01", 0)
    assert out.close and out.reply is None


def login(a, user="alice", now=0.0, version=1):
    handshake(a, "PLAIN", now=now)
    return answer(authenticate(a, f"\0{user}\0{PLAIN_USERS.get(user, 'x')}".encode(), version,
                               now), "SaslAuthenticate", version)


def test_session_lifetime_and_expiry():
    a = new_auth(reauth_ms=5000)
    assert login(a)["session_lifetime_ms"] == 5000
    assert a.on_frame(req("Metadata", 1, {"topics": None}), 4.9).passthrough
    out = a.on_frame(req("Metadata", 1, {"topics": None}), 5.0)
    assert out.close and "expired" in out.why


def test_reauthentication_keeps_the_session_going():
    a = new_auth(reauth_ms=5000)
    login(a)
    assert login(a, now=3.0)["session_lifetime_ms"] == 5000
    assert a.authenticated and a.principal.name == "alice"
    assert a.on_frame(req("Metadata", 1, {"topics": None}), 7.9).passthrough


def test_cannot_reauthenticate_with_a_different_principal():
    a = new_auth(reauth_ms=5000)
    login(a)
    body = login(a, user="bob", now=2.0)
    assert body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert body["error_message"] == ("Cannot change principals during re-authentication from "
                                     "User.alice: User.bob")


def test_cannot_reauthenticate_with_a_different_mechanism():
    a = new_auth(reauth_ms=5000)
    login(a)
    assert answer(handshake(a, "SCRAM-SHA-256", now=2.0), "SaslHandshake", 1)["error_code"] == 0
    body = answer(authenticate(a, b"n,,n=alice,r=abc", now=2.0), "SaslAuthenticate", 1)
    assert body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "not supported for re-authentication of mechanism 'PLAIN'" in body["error_message"]


def test_reauthenticating_again_faster_than_once_a_second_goes_to_the_api():
    a = new_auth(reauth_ms=5000)
    login(a)
    login(a, now=2.0)
    out = handshake(a, now=2.5)          # the broker's SaslHandshake handler answers it
    assert out.passthrough


def test_without_a_session_lifetime_a_handshake_after_authentication_goes_to_the_api():
    a = new_auth()
    login(a)
    assert handshake(a, now=10.0).passthrough
