"""SASL/OAUTHBEARER with Kafka's unsecured validator (mirrors OAuthBearerSaslServerTest,
OAuthBearerUnsecuredValidatorCallbackHandlerTest and OAuthBearerClientInitialResponseTest),
and gregor's client tokens in librdkafka's and Java's configuration forms."""
from __future__ import annotations

import base64
import json

import pytest

from gregor.broker.security.sasl import AuthenticationFailed, SaslFailure
from gregor.broker.security.sasl.oauthbearer import OAuthBearerServer, UnsecuredValidator
from gregor.client.config import COMMON_OPTIONS, parse_config
from gregor.client.errors import ConfigError
from gregor.client.security.sasl import SaslSettings

NOW = 1_700_000_000.0


def b64(doc) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


def token(claims=None, header=None, signature="") -> str:
    c = {"sub": "alice", "iat": NOW - 10, "exp": NOW + 60}
    c.update(claims or {})
    c = {k: v for k, v in c.items() if v is not None}
    return f"{b64(header or {'alg': 'none'})}.{b64(c)}.{signature}"


def message(tok: str, authzid: str = "", ext: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {tok}\x01{ext}\x01".encode()


def server(**options) -> OAuthBearerServer:
    return OAuthBearerServer(UnsecuredValidator(options, clock=lambda: NOW))


def test_valid_token_with_extensions_and_authzid():
    s = server()
    assert s.evaluate(message(token(), authzid="alice", ext="traceId=abc\x01")) == b""
    assert s.complete and s.authorization_id == "alice" and s.lifetime_ms == 60_000


@pytest.mark.parametrize("claims, header, signature", [
    ({"exp": NOW - 1}, None, ""),                       # expired
    ({"exp": None}, None, ""),                          # no expiry
    ({"sub": None}, None, ""),                          # no principal
    ({"sub": "  "}, None, ""),
    ({"iat": NOW + 100, "exp": NOW + 200}, None, ""),   # issued in the future
    ({"iat": NOW - 5, "exp": NOW - 6}, None, ""),       # expires before issued (and expired)
    ({"exp": "soon"}, None, ""),                        # wrong type
    ({}, {"alg": "HS256"}, ""),                         # signed tokens are not unsecured
    ({}, None, "c2lnbmF0dXJl"),
])
def test_invalid_tokens_get_the_json_challenge_then_fail(claims, header, signature):
    s = server()
    challenge = s.evaluate(message(token(claims, header, signature)))
    assert json.loads(challenge) == {"status": "invalid_token"} and not s.complete
    with pytest.raises(AuthenticationFailed, match='"status":"invalid_token"'):
        s.evaluate(b"\x01")


def test_required_scope():
    s = server(unsecuredValidatorRequiredScope="read write")
    assert s.evaluate(message(token({"scope": "read"}))) == \
        b'{"status":"insufficient_scope", "scope":"[read, write]"}'
    s = server(unsecuredValidatorRequiredScope="read write")
    s.evaluate(message(token({"scope": ["read", "write", "x"]})))
    assert s.complete


def test_clock_skew_and_principal_claim_options():
    s = server(unsecuredValidatorAllowableClockSkewMs="5000",
               unsecuredValidatorPrincipalClaimName="user")
    s.evaluate(message(token({"user": "bob", "exp": NOW - 2})))
    assert s.complete and s.authorization_id == "bob"
    with pytest.raises(ValueError):
        UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "-1"})


def test_authzid_other_than_the_principal():
    with pytest.raises(AuthenticationFailed, match="different from the token's principal"):
        server().evaluate(message(token(), authzid="bob"))


@pytest.mark.parametrize("raw", [
    b"", b"n,,", b"n,,\x01auth=Bearer x\x01",               # missing the final \x01
    b"n,,\x01\x01",                                          # no auth
    b"n,,\x01auth=Basic abc\x01\x01",                        # not Bearer
    b"n,,\x01auth=Bearer a b\x01\x01", b"\xff\xfe", b"y,,\x01auth=Bearer x\x01\x01"])
def test_malformed_initial_responses(raw):
    with pytest.raises(SaslFailure):
        server().evaluate(raw)


def settings(**values) -> SaslSettings:
    values.setdefault("bootstrap.servers", "localhost:9093")
    values.update({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"})
    return SaslSettings(parse_config(COMMON_OPTIONS, values))


@pytest.mark.parametrize("conf", [
    {"enable.sasl.oauthbearer.unsecure.jwt": "true",
     "sasl.oauthbearer.config": "principal=carol lifeSeconds=120 scope=read,write"},
    {"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
     'required unsecuredLoginStringClaim_sub="carol" unsecuredLoginLifetimeSeconds="120" '
     'unsecuredLoginListClaim_scope=",read,write";'},
])
def test_client_tokens_are_accepted_by_the_broker(conf):
    ex = settings(**conf).exchange()
    s = OAuthBearerServer(UnsecuredValidator({"unsecuredValidatorRequiredScope": "write"}))
    assert ex.next(s.evaluate(ex.first())) is None
    assert ex.done and s.authorization_id == "carol" and 110_000 < s.lifetime_ms <= 120_000


def test_client_configuration_errors():
    with pytest.raises(ConfigError, match="enable.sasl.oauthbearer.unsecure.jwt"):
        settings(**{"sasl.oauthbearer.config": "principal=x"})
    with pytest.raises(ConfigError, match="needs a principal"):
        settings()
