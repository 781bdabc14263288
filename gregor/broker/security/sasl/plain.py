"""SASL/PLAIN on the broker (RFC 4616, Kafka's PlainSaslServer).

One client message, `[authzid] NUL username NUL password` in UTF-8. librdkafka sends an empty
authzid, kafka-python and aiokafka the user name again: both are accepted; any other authzid is
refused. Users and passwords come from the listener's PLAIN JAAS options
(`user_<name>="<password>"`), compared in constant time.
"""
from __future__ import annotations

import hashlib
import hmac
from typing import Callable

from . import AuthenticationFailed, SaslFailure

MECHANISM = "PLAIN"


class PlainServer:
    mechanism = MECHANISM

    def __init__(self, password_of: Callable[[str], str | None]):
        self._password_of = password_of
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN takes exactly one client message")
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("the PLAIN message is not UTF-8") from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self._password_of(username)
        # digests of equal length, compared in constant time, also for unknown users: the
        # time taken says nothing about the password or about which users exist
        known = expected is not None
        ok = hmac.compare_digest(_digest(expected if known else "\0" + password),
                                 _digest(password))
        if not (ok and known):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        self.authorization_id = username
        self.complete = True
        return b""


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
