"""The REST API's own security: HTTP basic auth users and a TLS server context.

Users file, the property-file format Confluent's registry takes for basic auth (Jetty's
HashLoginService), one user a line:
    alice: s3cret, admin
    reader: pass2, readonly
Authorization is by role: a user whose only role is `readonly` may read (GET, lookups and
compatibility tests) and gets 403 (40301) on any change; every other user may do everything.
"""
from __future__ import annotations

import ssl


class AuthConfigError(ValueError):
    pass


def parse_users(text: str, where: str = "users file") -> dict[str, tuple[str, tuple]]:
    users = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name, sep, rest = line.partition(":")
        if not sep or not name.strip():
            raise AuthConfigError(f"{where}:{n}: expected 'user: password[, role...]'")
        fields = [f.strip() for f in rest.split(",")]
        if not fields[0]:
            raise AuthConfigError(f"{where}:{n}: user {name.strip()!r} has no password")
        if fields[0].startswith(("MD5:", "CRYPT:", "OBF:")):
            raise AuthConfigError(f"{where}:{n}: hashed passwords ({fields[0].split(':')[0]}) "
                                  "are not supported; write the password itself")
        users[name.strip()] = (fields[0], tuple(f for f in fields[1:] if f))
    if not users:
        raise AuthConfigError(f"{where}: no users")
    return users


def load_users(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return parse_users(f.read(), path)


def server_tls_context(certfile: str, keyfile: str | None = None,
                       client_ca: str | None = None) -> ssl.SSLContext:
    """TLS for the REST API; with `client_ca`, clients must show a certificate it signed."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certfile, keyfile)
    if client_ca:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
