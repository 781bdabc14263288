"""One connection's SASL authentication, as Kafka's SaslServerAuthenticator runs it. Sans-I/O:
`on_frame(frame, now)` takes one received frame (without its size prefix) and returns an
`Outcome` saying what the connection does with it.

Before authentication:
1. ApiVersions (once, any version the broker serves; an unsupported version is answered and
   may be retried) is handed to the broker's own handler (Outcome.passthrough). A second one
   closes the connection.
2. SaslHandshake picks a mechanism from `sasl.enabled.mechanisms`; the answer lists the enabled
   ones; an unknown mechanism gets UNSUPPORTED_SASL_MECHANISM and the connection closes. v1
   means SaslAuthenticate requests follow; v0 means raw size-prefixed tokens (legacy framing).
   Any other request closes the connection without an answer.
3. SaslAuthenticate carries each client token; the answer carries the server's challenge, and
   on success `session_lifetime_ms` (connections.max.reauth.ms, KIP-368). After a v1 handshake,
   any other request is answered with ILLEGAL_SASL_STATE and the connection closes. A failure
   is answered with SASL_AUTHENTICATION_FAILED (58) and the connection closes after
   connection.failed.authentication.delay.ms.

After authentication every request passes, until the session (if it has a lifetime) expires:
then any request closes the connection. A SaslHandshake before that (at most one per second)
starts re-authentication, which must keep the principal and the mechanism.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from ....protocol import messages
from ....protocol.errors import ErrorCode
from ....protocol.header import decode_request, encode_response, peek_request_header
from ....protocol.primitives import DecodeError
from ..principal import KafkaPrincipal
from . import AuthenticationFailed, SaslFailure

log = logging.getLogger("gregor.broker.security.sasl")

SASL_HANDSHAKE = messages.api("SaslHandshake")
SASL_AUTHENTICATE = messages.api("SaslAuthenticate")
_API_VERSIONS = 18
_SIZE_LEN = 4
# Kafka's KafkaChannel: a client may start re-authenticating at most once per second.
MIN_REAUTH_INTERVAL_S = 1.0

ServerFactory = Callable[[str], object]      # mechanism name -> a mechanism server


@dataclass
class Outcome:
    reply: bytes | None = None     # a complete frame (size prefix included) to write
    passthrough: bool = False      # hand the frame to the broker's request handling
    close: bool = False            # close the connection (after writing reply)
    delay: bool = False            # ... after connection.failed.authentication.delay.ms
    why: str = ""                  # for the broker's log (never a secret)


PASS = Outcome(passthrough=True)


def _name(api_key: int) -> str:
    api = messages.APIS.get(api_key)
    return api.name if api is not None else f"API key {api_key}"


class SaslAuthenticator:
    def __init__(self, enabled: list[str], new_server: ServerFactory, *,
                 reauth_ms: Callable[[str], int] = lambda mech: 0,
                 api_versions_range: tuple[int, int] = (0, 3)):
        self.enabled = list(enabled)
        self._new_server = new_server
        self._reauth_ms = reauth_ms
        self._av_range = api_versions_range
        self.state = "initial"       # -> handshake_or_versions / handshake -> authenticate
        #                              -> complete, or failed
        self.legacy = False          # SaslHandshake v0: raw tokens
        self.server = None
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.expiry: float | None = None          # clock time the session ends, or None
        self.supports_reauth = False              # SaslAuthenticate v1+ seen
        self.just_completed = False               # set when (re-)authentication succeeds
        self._reauth_started: float | None = None
        self._previous: tuple[str, KafkaPrincipal] | None = None   # during re-authentication

    @property
    def authenticated(self) -> bool:
        return self.state == "complete"

    @property
    def reauthenticating(self) -> bool:
        return self._previous is not None

    # -- entry point ------------------------------------------------------------------------

    def on_frame(self, frame, now: float) -> Outcome:
        if self.state == "failed":
            return Outcome(close=True, why="sent more after its authentication failed")
        if self.state == "complete":
            return self._authenticated_frame(frame, now)
        if self.state == "authenticate":
            return self._token(frame, now)
        return self._before_handshake(frame, now)

    # -- before the handshake ----------------------------------------------------------------

    def _before_handshake(self, frame, now: float) -> Outcome:
        try:
            api_key, version, corr = peek_request_header(frame)
        except DecodeError:
            return self._refuse("sent something that is not a Kafka request before "
                                "authenticating (a client with the wrong security.protocol?)")
        if api_key == _API_VERSIONS and not self.reauthenticating:
            if self.state == "handshake":
                return self._refuse("sent a second ApiVersions during the SASL handshake")
            self.state = "handshake_or_versions"
            lo, hi = self._av_range
            if lo <= version <= hi:
                self.state = "handshake"
            return PASS
        if api_key != SASL_HANDSHAKE.key:
            return self._refuse(f"sent {_name(api_key)} before authenticating (only "
                                "ApiVersions and SaslHandshake are allowed)")
        if not SASL_HANDSHAKE.supports(version):
            return self._refuse(f"sent SaslHandshake v{version}; v0-v1 are served")
        try:
            _, body = decode_request(SASL_HANDSHAKE, frame)
        except (DecodeError, ValueError, UnicodeDecodeError) as e:
            return self._refuse(f"sent a SaslHandshake that does not decode: {e}")
        mechanism = body["mechanism"]
        ok = mechanism in self.enabled
        reply = encode_response(SASL_HANDSHAKE, version, corr, {
            "error_code": ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            "mechanisms": self.enabled})
        if not ok:
            self.state = "failed"
            return Outcome(reply=reply, close=True, delay=True,
                           why=f"asked for SASL mechanism {mechanism!r}, which is not enabled "
                               f"(sasl.enabled.mechanisms={','.join(self.enabled)})")
        if self.reauthenticating and mechanism != self._previous[0]:
            self.state = "authenticate"
            self.legacy = version == 0
            self.server = _BadMechanism(
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._previous[0]}'")
            return Outcome(reply=reply)
        self.legacy = version == 0
        self.mechanism = mechanism
        self.server = self._new_server(mechanism)
        self.state = "authenticate"
        return Outcome(reply=reply)

    def _refuse(self, why: str) -> Outcome:
        self.state = "failed"
        return Outcome(close=True, why=why)

    # -- tokens ---------------------------------------------------------------------------

    def _token(self, frame, now: float) -> Outcome:
        if self.legacy:
            return self._legacy_token(bytes(frame), now)
        try:
            api_key, version, corr = peek_request_header(frame)
        except DecodeError:
            return self._refuse("sent a frame that is not a Kafka request during SASL "
                                "authentication")
        api = messages.APIS.get(api_key)
        if api_key != SASL_AUTHENTICATE.key:
            if api is None or not api.supports(version):
                return self._refuse(f"sent {_name(api_key)} v{version} during SASL "
                                    "authentication")
            self.state = "failed"
            message = f"Unexpected Kafka request of type {api.name} during SASL authentication."
            reply = encode_response(api, version, corr,
                                    {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                                     "error_message": message})
            return Outcome(reply=reply, close=True, why=message)
        if not SASL_AUTHENTICATE.supports(version):
            return self._refuse(f"sent SaslAuthenticate v{version}; v0-v2 are served")
        try:
            _, body = decode_request(SASL_AUTHENTICATE, frame)
        except (DecodeError, ValueError, UnicodeDecodeError) as e:
            return self._refuse(f"sent a SaslAuthenticate that does not decode: {e}")
        if version > 0:
            self.supports_reauth = True
        try:
            challenge = self.server.evaluate(bytes(body["auth_bytes"]))
            lifetime = self._maybe_complete(now)
        except (AuthenticationFailed, SaslFailure) as e:
            return self._failed(e, lambda msg: encode_response(
                SASL_AUTHENTICATE, version, corr,
                {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": msg,
                 "auth_bytes": b""}))
        return Outcome(reply=encode_response(SASL_AUTHENTICATE, version, corr, {
            "error_code": ErrorCode.NONE, "error_message": None,
            "auth_bytes": challenge or b"", "session_lifetime_ms": lifetime}))

    def _legacy_token(self, token: bytes, now: float) -> Outcome:
        try:
            challenge = self.server.evaluate(token)
            self._maybe_complete(now)
        except (AuthenticationFailed, SaslFailure) as e:
            return self._failed(e, None)
        if challenge is None:
            return Outcome()
        return Outcome(reply=len(challenge).to_bytes(_SIZE_LEN, "big") + challenge)

    def _failed(self, e: Exception, encode) -> Outcome:
        self.state = "failed"
        mech = self.mechanism or "?"
        text = "re-authentication" if self.reauthenticating else "authentication"
        if isinstance(e, AuthenticationFailed):
            client_text = str(e)
        else:
            client_text = (f"Authentication failed during {text} due to invalid credentials "
                           f"with SASL mechanism {mech}")
        why = f"failed SASL/{mech} {text}: {e}"
        reply = encode(client_text) if encode is not None else None
        return Outcome(reply=reply, close=True, delay=True, why=why)

    def _maybe_complete(self, now: float) -> int:
        """On the mechanism's completion: the principal, the session's end; returns
        session_lifetime_ms (0 until complete, and without a lifetime)."""
        if not self.server.complete:
            return 0
        principal = KafkaPrincipal("User", self.server.authorization_id)
        if self.reauthenticating:
            before = self._previous[1]
            if principal != before:
                raise AuthenticationFailed(
                    f"Cannot change principals during re-authentication from "
                    f"{before.type}.{before.name}: {principal.type}.{principal.name}")
        lifetime = max(0, int(self._reauth_ms(self.mechanism) or 0))
        credential_ms = self.server.lifetime_ms
        if credential_ms is not None:
            lifetime = max(0, min(lifetime, credential_ms) if lifetime else credential_ms)
        self.expiry = now + lifetime / 1000.0 if lifetime else None
        self.principal = principal
        self.state = "complete"
        self.just_completed = True
        self._previous = None
        self.server = None                    # nothing of the exchange is kept
        return lifetime

    # -- after authentication -----------------------------------------------------------------

    def _authenticated_frame(self, frame, now: float) -> Outcome:
        if self.expiry is not None and now >= self.expiry:
            return Outcome(close=True, why="sent a request after its SASL session expired "
                                           "(connections.max.reauth.ms) without re-authenticating")
        if self.expiry is None or len(frame) < 2 or \
                int.from_bytes(bytes(frame[:2]), "big") != SASL_HANDSHAKE.key:
            return PASS
        if self._reauth_started is not None and \
                now - self._reauth_started < MIN_REAUTH_INTERVAL_S:
            return PASS                # the broker's handler answers ILLEGAL_SASL_STATE
        self._reauth_started = now
        self._previous = (self.mechanism, self.principal)
        self.state = "handshake"
        return self._before_handshake(frame, now)


class _BadMechanism:
    """Re-authentication with another mechanism: fails on the first token, as Kafka's
    REAUTH_BAD_MECHANISM state does."""
    complete = False
    authorization_id = None
    lifetime_ms = None

    def __init__(self, message: str):
        self._message = message

    def evaluate(self, token: bytes) -> bytes:
        raise AuthenticationFailed(self._message)
