"""SASL/OAUTHBEARER on the broker (RFC 7628) with Kafka's default validator, the *unsecured* one
(OAuthBearerUnsecuredValidatorCallbackHandler): for development and tests, as in Kafka. It
accepts unsigned JWTs (`alg: none`, empty signature) whose claims name the principal (`sub`),
an expiry (`exp`) in the future, an optional `iat` not in the future and the required scope.
Anyone can write such a token: use it only where the network itself is trusted.

One client message: `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01...]\\x01`. An
invalid token is answered, as Kafka does, with a JSON challenge ({"status":"invalid_token"});
the client then sends \\x01 and the authentication fails with that JSON as the message. The
session lasts until the token expires (KIP-368 re-authentication brings a new one).

Options (from the listener's oauthbearer JAAS config, Kafka's names):
unsecuredValidatorPrincipalClaimName (sub), unsecuredValidatorScopeClaimName (scope),
unsecuredValidatorRequiredScope (space separated), unsecuredValidatorAllowableClockSkewMs (0).
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import time
from typing import Callable

from . import AuthenticationFailed, SaslFailure

log = logging.getLogger("gregor.broker.security.sasl")

MECHANISM = "OAUTHBEARER"
_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class InvalidToken(ValueError):
    def __init__(self, reason: str, scope: str | None = None):
        super().__init__(reason)
        self.scope = scope


def _b64url_json(part: str, what: str) -> dict:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        doc = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidToken(f"the JWT {what} is not base64url-encoded JSON") from None
    if not isinstance(doc, dict):
        raise InvalidToken(f"the JWT {what} is not a JSON object")
    return doc


def _seconds(claims: dict, name: str):
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidToken(f"The {name} claim had the incorrect type: {type(value).__name__}")
    return float(value)


class UnsecuredValidator:
    def __init__(self, options: dict | None = None, clock: Callable[[], float] = time.time):
        options = options or {}
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "sub").strip()
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "scope").strip()
        self.required_scope = (options.get("unsecuredValidatorRequiredScope") or "").split()
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "0").strip()
        try:
            self.skew_ms = int(skew)
        except ValueError:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs={skew!r} is not a number") \
                from None
        if self.skew_ms < 0:
            raise ValueError("unsecuredValidatorAllowableClockSkewMs must not be negative")
        self.clock = clock

    def validate(self, token: str) -> tuple[str, float]:
        """(principal name, expiry in ms since the epoch); raises InvalidToken."""
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("an unsecured JWS has three dot-separated parts")
        header = _b64url_json(parts[0], "header")
        claims = _b64url_json(parts[1], "claims")
        if header.get("alg") != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        exp = _seconds(claims, "exp")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        now_ms = self.clock() * 1000
        iat = _seconds(claims, "iat")
        if iat is not None and iat * 1000 > now_ms + self.skew_ms:
            raise InvalidToken(f"The Issued At value ({iat:f} seconds) was after the indicated "
                               f"time ({now_ms:.0f} ms) plus allowable clock skew "
                               f"({self.skew_ms} ms)")
        if now_ms - self.skew_ms >= exp * 1000:
            raise InvalidToken(f"The indicated time ({now_ms:.0f} ms) minus allowable clock "
                               f"skew ({self.skew_ms} ms) was on or after the Expiration Time "
                               f"value ({exp:f} seconds)")
        if iat is not None and exp <= iat:
            raise InvalidToken(f"The Expiration Time time ({exp:f} seconds) was not after the "
                               f"Issued At time ({iat:f} seconds)")
        scope = claims.get(self.scope_claim)
        have = set(scope.split()) if isinstance(scope, str) else \
            set(scope) if isinstance(scope, list) else set()
        for needed in self.required_scope:
            if needed not in have:
                raise InvalidToken(f"The provided scope ({sorted(have)}) was missing a required "
                                   f"scope ({needed}).  All required scope elements: "
                                   f"{self.required_scope}",
                                   "[" + ", ".join(self.required_scope) + "]")
        return principal, exp * 1000


class OAuthBearerServer:
    mechanism = MECHANISM

    def __init__(self, validator: UnsecuredValidator):
        self._validator = validator
        self._error: str | None = None
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error)
        if self.complete:
            raise SaslFailure("OAUTHBEARER takes one client message")
        self._error = None
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid OAUTHBEARER client first message") from None
        m = _INITIAL.fullmatch(text)
        if m is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        props = dict(kv.split("=", 1) for kv in m.group("kvpairs").split(_SEP) if kv)
        auth = props.pop("auth", None)
        if auth is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
        am = _AUTH.fullmatch(auth)
        if am is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if am.group("scheme").lower() != "bearer":
            raise SaslFailure("Invalid scheme in OAUTHBEARER client first message")
        try:
            principal, expiry_ms = self._validator.validate(am.group("token"))
        except InvalidToken as e:
            status = "insufficient_scope" if e.scope is not None else "invalid_token"
            self._error = f'{{"status":"{status}"' + \
                (f', "scope":"{e.scope}"' if e.scope is not None else "") + "}"
            log.info("OAUTHBEARER token refused: %s", e)
            return self._error.encode("utf-8")
        authzid = m.group("authzid") or ""
        if authzid and authzid != principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({principal})")
        self.authorization_id = principal
        self.lifetime_ms = max(0, int(expiry_ms - self._validator.clock() * 1000))
        self.complete = True
        return b""
