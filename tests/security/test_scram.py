"""SCRAM messages and key derivation (mirrors Kafka's ScramFormatterTest, ScramMessagesTest and
ScramCredentialUtilsTest), checked against RFC 7677's test vector and the independent `scramp`
implementation."""
from __future__ import annotations

import base64

import pytest

from gregor.security.scram import (SCRAM_SHA_256, SCRAM_SHA_512, ClientFinal, ClientFirst,
                                   ScramClient, ScramCredential, ScramError, ServerFinal,
                                   ServerFirst, auth_message, credential_from_password,
                                   escape_name, random_nonce, random_salt, unescape_name, xor)


def test_rfc7677_example():
    """RFC 7677 section 3: user "user", password "pencil", 4096 iterations."""
    c1 = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    s1 = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    c2 = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
          "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    s2 = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    first, server_first, final = ClientFirst.parse(c1), ServerFirst.parse(s1), ClientFinal.parse(c2)
    mech = SCRAM_SHA_256
    salted = mech.salted_password("pencil", server_first.salt, server_first.iterations)
    msg = auth_message(first.bare, s1, final.without_proof)
    client_key = mech.client_key(salted)
    proof = xor(client_key, mech.hmac(mech.stored_key(client_key), msg))
    assert proof == final.proof
    assert ServerFinal.build(mech.hmac(mech.server_key(salted), msg)) == s2
    # and the client side of ours produces exactly the RFC's messages
    client = ScramClient(mech, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == c1
    assert client.final(s1) == c2
    client.verify(s2)
    with pytest.raises(ScramError, match="signature"):
        client.verify("v=" + base64.b64encode(b"\0" * 32).decode())


@pytest.mark.parametrize("name, saslname", [("alice", "alice"), ("a,b", "a=2Cb"),
                                            ("a=b", "a=3Db"), ("=,=", "=3D=2C=3D"),
                                            ("x=2C", "x=3D2C")])
def test_sasl_name_round_trip(name, saslname):
    assert escape_name(name) == saslname
    assert unescape_name(saslname) == name


@pytest.mark.parametrize("bad", ["a=b", "a=2", "=", "a=4E"])
def test_sasl_name_with_a_bare_equals_is_invalid(bad):
    with pytest.raises(ScramError):
        unescape_name(bad)


@pytest.mark.parametrize("message", [
    "n,,n=testuser,r=abc",
    "n,a=testuser,n=testuser,r=abc",
    "n,,n=test=2Cuser,r=abc",
    "n,,m=reserved,n=testuser,r=abc",
    "n,,n=testuser,r=abc,tokenauth=true",
    "n,,n=testuser,r=abc,ext=1,other=2",
])
def test_valid_client_first_messages(message):
    m = ClientFirst.parse(message.encode())
    assert m.nonce == "abc"
    assert m.bare == message.split(",", 2)[2]


@pytest.mark.parametrize("message", [
    "y,,n=testuser,r=abc",          # channel binding flags other than n are refused
    "p=tls-unique,,n=testuser,r=abc",
    "n,,n=testuser,r=a,b",          # a comma cannot be part of a nonce
    "n,,n=test,user,r=abc",         # an unescaped comma in the name
    "n,,n=testuser",                # no nonce
    "n,,n=,r=abc",                  # empty name
    "n,,n=testuser,r=",             # empty nonce
    "n,,n=t\u00e9st,r=abc",         # Kafka's sasl names are ASCII
    "n,,r=abc,n=testuser",          # wrong order
    "",
])
def test_invalid_client_first_messages(message):
    with pytest.raises(ScramError):
        ClientFirst.parse(message.encode())


def test_client_first_that_is_not_utf8():
    with pytest.raises(ScramError):
        ClientFirst.parse(b"n,,n=\xff\xfe,r=abc")


def test_server_first_and_final_messages():
    s = ServerFirst.build("abcdef", b"salt", 4096)
    parsed = ServerFirst.parse(s)
    assert (parsed.nonce, parsed.salt, parsed.iterations) == ("abcdef", b"salt", 4096)
    for bad in ["r=abc,s=c2FsdA==,i=0", "r=abc,s=!!!,i=4096", "r=abc,i=4096", "s=c2FsdA==,i=1"]:
        with pytest.raises(ScramError):
            ServerFirst.parse(bad)
    assert ServerFinal.parse("e=invalid-proof").error == "invalid-proof"
    assert ServerFinal.parse("v=" + base64.b64encode(b"sig").decode()).signature == b"sig"
    for bad in ["x=1", "v=!!", "e="]:
        with pytest.raises(ScramError):
            ServerFinal.parse(bad)


@pytest.mark.parametrize("message", [
    "c=biws,r=abcdef",                                  # no proof
    "c=biws,p=cHJvb2Y=",                                # no nonce
    "c=!!,r=abc,p=cHJvb2Y=",                            # channel binding not base64
    "c=biws,r=abc,p=!!",                                # proof not base64
    "r=abc,c=biws,p=cHJvb2Y=",
])
def test_invalid_client_final_messages(message):
    with pytest.raises(ScramError):
        ClientFinal.parse(message)


def test_client_final_keeps_extensions_in_the_bytes_without_proof():
    m = ClientFinal.parse("c=biws,r=abc,ext=x,p=cHJvb2Y=")
    assert m.without_proof == "c=biws,r=abc,ext=x" and m.proof == b"proof"


def test_credential_text_round_trip_and_repr_hides_keys():
    cred = credential_from_password(SCRAM_SHA_512, "secret", 8192, salt=b"NaCl")
    text = cred.to_text()
    assert text.startswith("salt=TmFDbA==,stored_key=") and text.endswith(",iterations=8192")
    assert ScramCredential.from_text(text) == cred
    assert "stored" not in repr(cred) and base64.b64encode(cred.stored_key).decode() not in repr(cred)
    for bad in ["salt=AA==,stored_key=AA==", "iterations=x", "salt=!!,stored_key=AA==,"
                "server_key=AA==,iterations=1"]:
        with pytest.raises(ScramError):
            ScramCredential.from_text(bad)


def test_nonces_and_salts_are_printable_base36_and_random():
    seen = {random_nonce() for _ in range(100)}
    assert len(seen) == 100
    assert all(n.isalnum() and n == n.lower() for n in seen)
    assert random_salt() != random_salt()


def test_our_client_against_the_scramp_server():
    """An independent server implementation accepts our client and its signature checks."""
    scramp = pytest.importorskip("scramp", reason="scramp (test extra) is not installed")
    for mech, name in ((SCRAM_SHA_256, "SCRAM-SHA-256"), (SCRAM_SHA_512, "SCRAM-SHA-512")):
        cred = credential_from_password(mech, "pw-1", 4096, salt=b"saltsaltsaltsalt")
        m = scramp.ScramMechanism(name)
        server = m.make_server(lambda user: (cred.salt, cred.stored_key, cred.server_key,
                                             cred.iterations))
        ours = ScramClient(mech, "bob", "pw-1")
        server.set_client_first(ours.first())
        client_final = ours.final(server.get_server_first())
        server.set_client_final(client_final)
        ours.verify(server.get_server_final())
