"""The broker's PLAIN and SCRAM servers (mirrors Kafka's PlainSaslServerTest and
ScramSaslServerTest), sans-I/O; scramp plays an independent SCRAM client."""
from __future__ import annotations

import base64

import pytest

from gregor.broker.security.sasl import AuthenticationFailed, SaslFailure
from gregor.broker.security.sasl.plain import PlainServer
from gregor.broker.security.sasl.scram import ScramServer
from gregor.security.scram import (SCRAM_SHA_256, SCRAM_SHA_512, ClientFirst, ScramClient,
                                   credential_from_password)

USERS = {"alice": "alice-secret", "a,b=c": "odd-secret"}


# -- PLAIN ---------------------------------------------------------------------------------

def plain(token: bytes) -> PlainServer:
    server = PlainServer(USERS.get)
    server.evaluate(token)
    return server


@pytest.mark.parametrize("authzid", [b"", b"alice"])
def test_plain_accepts_both_authzid_forms(authzid):
    server = plain(authzid + b"\0alice\0alice-secret")
    assert server.complete and server.authorization_id == "alice"


def test_plain_authzid_that_is_another_user():
    with pytest.raises(AuthenticationFailed, match="authorization id that is different"):
        plain(b"bob\0alice\0alice-secret")


@pytest.mark.parametrize("token, message", [
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0mallory\0alice-secret", "Invalid username or password"),
    (b"\0\0", "username not specified"),
    (b"\0\0p", "username not specified"),
    (b"a\0\0", "username not specified"),
    (b"\0alice\0", "password not specified"),
])
def test_plain_failures_say_what_kafka_says(token, message):
    with pytest.raises(AuthenticationFailed, match=message):
        plain(token)


@pytest.mark.parametrize("token", [b"", b"alice", b"\0alice", b"a\0b\0c\0d", b"\xff\0\xfe\0x"])
def test_plain_malformed_messages(token):
    with pytest.raises(SaslFailure):
        plain(token)


def test_plain_takes_one_message_only():
    server = plain(b"\0alice\0alice-secret")
    with pytest.raises(SaslFailure):
        server.evaluate(b"\0alice\0alice-secret")


# -- SCRAM ---------------------------------------------------------------------------------

MECHS = [SCRAM_SHA_256, SCRAM_SHA_512]
CREDS = {(u, m.name): credential_from_password(m, pw, 4096)
         for u, pw in USERS.items() for m in MECHS}


def scram_server(mech):
    return ScramServer(mech, lambda user, name: CREDS.get((user, name)))


@pytest.mark.parametrize("mech", MECHS, ids=lambda m: m.name)
@pytest.mark.parametrize("user", list(USERS))
def test_scram_exchange_with_our_client(mech, user):
    server, client = scram_server(mech), ScramClient(mech, user, USERS[user])
    server_first = server.evaluate(client.first().encode())
    assert not server.complete
    server_final = server.evaluate(client.final(server_first).encode())
    client.verify(server_final)
    assert server.complete and server.authorization_id == user


@pytest.mark.parametrize("mech", MECHS, ids=lambda m: m.name)
def test_scram_exchange_with_the_scramp_client(mech):
    scramp = pytest.importorskip("scramp", reason="scramp (test extra) is not installed")
    cred = CREDS[("alice", mech.name)]
    client = scramp.ScramClient([mech.name], "alice", "alice-secret")
    server = scram_server(mech)
    client.set_server_first(server.evaluate(client.get_client_first().encode()).decode())
    client.set_server_final(server.evaluate(client.get_client_final().encode()).decode())
    assert server.complete and cred.iterations == 4096


def test_librdkafka_repeated_nonce_is_accepted():
    """librdkafka < 2.6.1 sends r=<client nonce><client nonce><server nonce> in client-final;
    Kafka checks `endsWith` and builds the AuthMessage from the client's own bytes."""
    mech = SCRAM_SHA_256
    server = scram_server(mech)
    client_nonce = "fyko+d2lbbFgONRv9qkxdawL"
    first = f"n,,n=alice,r={client_nonce}"
    server_first = server.evaluate(first.encode()).decode()
    full_nonce = server_first.split(",")[0][2:]
    without_proof = f"c=biws,r={client_nonce}{full_nonce}"
    salted = mech.salted_password("alice-secret", CREDS[("alice", mech.name)].salt, 4096)
    msg = f"n=alice,r={client_nonce},{server_first},{without_proof}".encode()
    key = mech.client_key(salted)
    proof = bytes(a ^ b for a, b in zip(key, mech.hmac(mech.stored_key(key), msg)))
    server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert server.complete


def test_client_final_with_another_nonce_fails():
    mech = SCRAM_SHA_256
    server, client = scram_server(mech), ScramClient(mech, "alice", "alice-secret")
    server_first = server.evaluate(client.first().encode()).decode()
    nonce = server_first.split(",")[0]
    forged = client.final(server_first.replace(nonce, nonce + "x", 1))   # proof for another nonce
    with pytest.raises(SaslFailure, match="nonce"):
        server.evaluate(forged.encode())
    assert not server.complete


@pytest.mark.parametrize("user, password", [("alice", "not-the-password-42"),
                                            ("mallory", "not-the-password-42")])
def test_wrong_password_and_unknown_user_fail_alike(user, password):
    mech = SCRAM_SHA_512
    server, client = scram_server(mech), ScramClient(mech, user, password)
    with pytest.raises(SaslFailure) as e:
        server_first = server.evaluate(client.first().encode())
        server.evaluate(client.final(server_first).encode())
    assert not server.complete
    assert password not in str(e.value)


def test_user_with_only_the_other_mechanism_fails():
    creds = {("bob", "SCRAM-SHA-512"): credential_from_password(SCRAM_SHA_512, "pw")}
    server = ScramServer(SCRAM_SHA_256, lambda u, m: creds.get((u, m)))
    with pytest.raises(SaslFailure, match="no SCRAM-SHA-256 credential"):
        server.evaluate(ScramClient(SCRAM_SHA_256, "bob", "pw").first().encode())


@pytest.mark.parametrize("authzid, ok", [("", True), ("alice", True), ("bob", False)])
def test_scram_authorization_id(authzid, ok):
    mech = SCRAM_SHA_256
    server = scram_server(mech)
    client = ScramClient(mech, "alice", "alice-secret")
    first = client.first().replace("n,,", f"n,{'a=' + authzid if authzid else ''},", 1)
    if not ok:
        with pytest.raises(AuthenticationFailed, match="different from username"):
            server.evaluate(first.encode())
        return
    server_first = server.evaluate(first.encode())
    server.evaluate(client.final(server_first).encode())
    assert server.authorization_id == "alice"


def test_credential_below_the_minimum_iterations_is_refused():
    weak = credential_from_password(SCRAM_SHA_256, "pw", 4096)
    weak = type(weak)(weak.salt, weak.stored_key, weak.server_key, 1000)
    server = ScramServer(SCRAM_SHA_256, lambda u, m: weak)
    with pytest.raises(SaslFailure, match="less than the minimum"):
        server.evaluate(b"n,,n=bob,r=abc")


@pytest.mark.parametrize("token", [b"", b"garbage", b"y,,n=alice,r=x", b"\xff" * 40,
                                   b"n,,n=alice,r=a,b"])
def test_malformed_first_message(token):
    with pytest.raises(SaslFailure):
        scram_server(SCRAM_SHA_256).evaluate(token)


def test_nothing_after_failure_or_completion():
    mech = SCRAM_SHA_256
    server, client = scram_server(mech), ScramClient(mech, "alice", "alice-secret")
    server.evaluate(server_first := client.first().encode()) and None
    with pytest.raises(SaslFailure):
        server.evaluate(b"c=biws,r=nope,p=AAAA")
    with pytest.raises(SaslFailure):                 # failed for good
        server.evaluate(server_first)
    assert ClientFirst.parse(server_first).username == "alice"
