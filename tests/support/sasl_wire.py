"""The blocking wire client of wire.py over TLS, and SASL logins done by hand, for tests that
need to see exactly what the broker answers (or that it answers nothing and closes)."""
from __future__ import annotations

import socket
import ssl

from gregor.security.scram import MECHANISMS, ScramClient
from tests.support.wire import WireClient


def client_context(pki, cert: tuple | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca_pem))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


class SecureWireClient(WireClient):
    def __init__(self, port: int, tls: ssl.SSLContext | None = None, timeout: float = 10.0):
        super().__init__(port, host="localhost", timeout=timeout)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")

    def is_closed(self, timeout: float = 5.0) -> bool:
        try:
            return super().is_closed(timeout)
        except (ssl.SSLError, OSError):
            return True


def handshake(c: WireClient, mechanism: str, version: int = 1) -> dict:
    return c.request("SaslHandshake", version, {"mechanism": mechanism})


def authenticate(c: WireClient, token: bytes, version: int = 1) -> dict:
    return c.request("SaslAuthenticate", version, {"auth_bytes": token})


def login(c: WireClient, mechanism: str, user: str, password: str, *, version: int = 1) -> dict:
    """A complete SASL login with SaslHandshake v1 and SaslAuthenticate; returns the last
    SaslAuthenticate answer (error_code 0 when it worked)."""
    body = handshake(c, mechanism)
    assert body["error_code"] == 0, body
    if mechanism == "PLAIN":
        return authenticate(c, f"\0{user}\0{password}".encode(), version)
    client = ScramClient(MECHANISMS[mechanism], user, password)
    first = authenticate(c, client.first().encode(), version)
    if first["error_code"]:
        return first
    final = authenticate(c, client.final(first["auth_bytes"]).encode(), version)
    if final["error_code"] == 0:
        client.verify(final["auth_bytes"])
    return final


def connect(port: int, tls: ssl.SSLContext | None = None) -> SecureWireClient:
    return SecureWireClient(port, tls)


__all__ = ["SecureWireClient", "client_context", "connect", "handshake", "authenticate",
           "login", "socket"]
