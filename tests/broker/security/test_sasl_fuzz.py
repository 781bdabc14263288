"""Hypothesis against the SASL servers and the authenticator, sans-I/O: any bytes, in any order,
fail with the authentication errors (never another exception), and nothing but a correct
exchange authenticates."""
from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.broker.security.sasl import AuthenticationFailed, SaslFailure
from gregor.broker.security.sasl.authenticator import SaslAuthenticator
from gregor.broker.security.sasl.plain import PlainServer
from gregor.broker.security.sasl.scram import ScramServer
from gregor.protocol import messages
from gregor.protocol.header import encode_request
from gregor.security.scram import MECHANISMS, credential_from_password

CRED = credential_from_password(MECHANISMS["SCRAM-SHA-256"], "the-password")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def servers():
    return [PlainServer({"alice": "the-password"}.get),
            ScramServer(MECHANISMS["SCRAM-SHA-256"], lambda u, m: CRED if u == "alice" else None)]


@SETTINGS
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4))
def test_garbage_tokens_never_authenticate(tokens):
    for server in servers():
        for token in tokens:
            try:
                server.evaluate(token)
            except (AuthenticationFailed, SaslFailure):
                break
        assert not server.complete


scram_like = st.builds(lambda user, nonce, tail: f"n,,n={user},r={nonce}{tail}".encode(),
                       st.sampled_from(["alice", "bob", "a=2Cb", "=3D"]),
                       st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e),
                               min_size=1, max_size=30),
                       st.sampled_from(["", ",ext=1", ",", "\x00"]))
final_like = st.builds(lambda c, r, p: f"c={c},r={r},p={p}".encode(),
                       st.sampled_from(["biws", "", "eSws", "!!"]),
                       st.text(min_size=0, max_size=60), st.text(min_size=0, max_size=60))


@SETTINGS
@given(scram_like, final_like)
def test_scram_shaped_messages_without_the_password_never_authenticate(first, final):
    server = servers()[1]
    try:
        server.evaluate(first)
        server.evaluate(final)
    except (AuthenticationFailed, SaslFailure):
        pass
    assert not server.complete


def _frame(api: str, version: int, body: dict) -> bytes:
    return encode_request(messages.api(api), version, 1, "fuzz", body)[4:]


frames = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda k, v, rest: struct.pack(">hhi", k, v, 1) + rest,
              st.integers(-5, 80), st.integers(-2, 20), st.binary(max_size=60)),
    st.builds(lambda m, v: _frame("SaslHandshake", v, {"mechanism": m}),
              st.sampled_from(["PLAIN", "SCRAM-SHA-256", "GSSAPI", ""]), st.integers(0, 1)),
    st.builds(lambda t, v: _frame("SaslAuthenticate", v, {"auth_bytes": t}),
              st.binary(max_size=120), st.integers(0, 2)),
    st.just(_frame("ApiVersions", 0, {})),
    st.just(_frame("Metadata", 1, {"topics": None})),
)


@SETTINGS
@given(st.lists(frames, min_size=1, max_size=8))
def test_authenticator_admits_nothing_but_api_versions_before_authentication(sequence):
    auth = SaslAuthenticator(["PLAIN", "SCRAM-SHA-256"],
                             lambda m: servers()[0 if m == "PLAIN" else 1])
    for frame in sequence:
        out = auth.on_frame(frame, 0.0)
        if out.passthrough:
            assert struct.unpack_from(">h", frame)[0] == 18, "a gated API was let through"
        if out.close:
            break
    assert not auth.authenticated and auth.principal is None
