"""TLS settings both sides read the same way: ssl.enabled.protocols and ssl.cipher.suites."""
from __future__ import annotations

import ssl

_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3,
             "TLSV1.1": ssl.TLSVersion.TLSv1_1, "TLSV1": ssl.TLSVersion.TLSv1}


def names(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def protocol_range(enabled) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """ssl.enabled.protocols -> (minimum, maximum) TLS version; ValueError when empty or
    naming something that is not a TLS version."""
    versions = []
    for name in names(enabled):
        v = _VERSIONS.get(name.upper())
        if v is None:
            raise ValueError(f"ssl.enabled.protocols: {name!r} is not a TLS version "
                             "(TLSv1.2, TLSv1.3)")
        versions.append(v)
    if not versions:
        raise ValueError("ssl.enabled.protocols is empty; use TLSv1.2,TLSv1.3")
    return min(versions), max(versions)


def iana_to_openssl(name: str) -> str:
    """TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256 (the usual case);
    OpenSSL names pass through."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, _, rest = name[4:].partition("_WITH_")
    rest = rest.replace("AES_128", "AES128").replace("AES_256", "AES256") \
        .replace("CHACHA20_POLY1305", "CHACHA20-POLY1305")
    return f"{kx.replace('_', '-')}-{rest.replace('_', '-')}"


def set_ciphers(ctx: ssl.SSLContext, suites) -> None:
    """ssl.cipher.suites, IANA names as Kafka takes them or OpenSSL's, for TLS 1.2. TLS 1.3
    suites cannot be chosen through Python's ssl module: OpenSSL keeps its TLS 1.3 defaults.
    ValueError when OpenSSL knows none of them."""
    chosen = [n for n in names(suites) if not n.startswith(("TLS_AES_", "TLS_CHACHA20_"))]
    if not chosen:
        return
    try:
        ctx.set_ciphers(":".join(iana_to_openssl(n) for n in chosen))
    except ssl.SSLError:
        raise ValueError(f"ssl.cipher.suites: none of {chosen} is a cipher suite OpenSSL "
                         "knows") from None
