"""TLS on the broker's SSL and SASL_SSL listeners: the server context and mTLS principals.

The context is built from one listener's settings (listener-prefixed values first):
ssl.keystore.* (the broker's key and certificate chain, gregor/security/stores.py),
ssl.truststore.* (CAs for client certificates), ssl.client.auth none | requested | required,
ssl.enabled.protocols and ssl.cipher.suites. On a SASL_SSL listener the unprefixed
ssl.client.auth is ignored, as in Kafka: only listener.name.<l>.ssl.client.auth asks clients
for certificates there (the client's identity is its SASL one).

A client that presents a verified certificate on an SSL listener is `User:<DN>`, the subject
in RFC 2253 form as Java prints it (CN=alice,OU=..,O=..) passed through
ssl.principal.mapping.rules; without a certificate it stays User:ANONYMOUS.
"""
from __future__ import annotations

import ssl

from ...security.stores import StoreError, configure_keystore, configure_truststore
from ...security.tls_settings import protocol_range, set_ciphers
from ..config import ConfigError
from .principal_mapper import SslPrincipalMapper
from .settings import ListenerSettings

_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# RFC 2253 keywords Java's X500Principal.getName() prints; other attributes print as OID=#hex.
_JAVA_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST",
                  "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.9": "STREET",
                  "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}


def server_context(settings: ListenerSettings, protocol: str) -> ssl.SSLContext:
    """The TLS context of one SSL / SASL_SSL listener; ConfigError when it cannot be built."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.minimum_version, ctx.maximum_version = protocol_range(
            settings.get("ssl.enabled.protocols"))
        set_ciphers(ctx, settings.get("ssl.cipher.suites"))
    except ValueError as e:
        raise ConfigError(f"listener {settings.listener}: {e}") from None
    try:
        if not configure_keystore(ctx, settings.get):
            raise ConfigError(
                f"listener {settings.listener} ({protocol}) needs the broker's key and "
                "certificate: set ssl.keystore.location (with ssl.keystore.type=PEM or "
                "PKCS12) or ssl.keystore.key with ssl.keystore.certificate.chain, or "
                f"{settings.prefix}ssl.* for this listener only")
        trusted = configure_truststore(ctx, settings.get)
    except StoreError as e:
        raise ConfigError(f"listener {settings.listener}: {e}") from None
    auth = settings.prefixed("ssl.client.auth") if protocol == "SASL_SSL" else \
        settings.get("ssl.client.auth")
    auth = str(auth or "none").strip().lower()
    if auth not in _VERIFY:
        raise ConfigError(f"ssl.client.auth={auth!r}; use none, requested or required")
    ctx.verify_mode = _VERIFY[auth]
    if auth != "none" and not trusted:
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    # Tickets would let a client resume without presenting its certificate again; keep each
    # connection's identity its own handshake's.
    ctx.options |= ssl.OP_NO_TICKET
    return ctx


def subject_dn(der: bytes) -> str:
    """A certificate's subject as Java's X500Principal.getName() prints it (RFC 2253)."""
    from cryptography import x509
    cert = x509.load_der_x509_certificate(der)
    rdns = []
    for rdn in reversed(list(cert.subject.rdns)):
        parts = []
        for attr in rdn:
            keyword = _JAVA_KEYWORDS.get(attr.oid.dotted_string)
            if keyword is not None:
                text = attr.rfc4514_string()
                parts.append(keyword + text[text.index("="):])
            else:
                parts.append(f"{attr.oid.dotted_string}=#{_der_value(attr).hex()}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


def _der_value(attr) -> bytes:
    """The DER encoding of an attribute's value (tag, length, bytes), as Java prints it."""
    tag = getattr(getattr(attr, "_type", None), "value", 12)      # default UTF8String
    codec = {30: "utf-16-be", 28: "utf-32-be", 12: "utf-8"}.get(tag, "latin-1")
    body = attr.value.encode(codec) if isinstance(attr.value, str) else bytes(attr.value)
    n = len(body)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + \
        n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + body


def peer_principal_name(ssl_object, mapper: SslPrincipalMapper) -> str | None:
    """The mapped principal name of a verified client certificate, None without one.
    Raises NoMatchingRule when no mapping rule applies."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return mapper.name(subject_dn(der))
