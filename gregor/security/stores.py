"""Key stores and trust stores for TLS, with Kafka's (Java) config names, loaded into an
ssl.SSLContext. Shared by the broker's listeners and the clients.

    ssl.keystore.type          PEM | PKCS12 | JKS (Kafka's default; read as PKCS12, which is what
                               Java itself does with keystore.type.compat, a real JKS file is
                               refused with the keytool command that converts it)
    ssl.keystore.location      the store file (PEM: private key and certificate chain in one file)
    ssl.keystore.password      the store's password (PKCS12)
    ssl.key.password           the private key's password (PEM with an encrypted key)
    ssl.keystore.key           inline PEM private key          } instead of a location
    ssl.keystore.certificate.chain  inline PEM certificate chain }
    ssl.truststore.type/location/password, ssl.truststore.certificates (inline PEM CAs)

Python's ssl module loads keys and chains from files only, so inline PEM and PKCS12 material is
written to a 0600 temporary file that is removed as soon as OpenSSL has read it; the private key
in that file is encrypted with a one-time random password, so it never touches the disk in clear.
"""
from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from typing import Callable

_JKS_MAGIC = b"\xfe\xed\xfe\xed"

Getter = Callable[[str], object]      # config name -> value or None when unset


class StoreError(ValueError):
    """A key or trust store that cannot be loaded (never quotes passwords or keys)."""


def _text(value) -> str | None:
    if value is None:
        return None
    value = str(value)
    return value if value.strip() else None


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise StoreError(f"cannot read {what} {path}: {e.strerror or e}") from None


def _refuse_jks(data: bytes, what: str, path: str) -> None:
    if data.startswith(_JKS_MAGIC):
        raise StoreError(
            f"{what} {path} is a Java JKS store, which gregor cannot read; convert it with "
            f"`keytool -importkeystore -srckeystore {path} -destkeystore store.p12 "
            "-deststoretype PKCS12` and set the type to PKCS12 (or use PEM files)")


def _password_bytes(value) -> bytes | None:
    text = _text(value)
    return None if text is None else text.encode("utf-8")


def load_chain_from_pem(ctx: ssl.SSLContext, pem: bytes, password: str | None) -> None:
    """Load key + chain PEM bytes through a 0600 temporary file removed right after."""
    fd, path = tempfile.mkstemp(prefix="gregor-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        try:
            ctx.load_cert_chain(path, password=password)
        except ssl.SSLError as e:
            raise StoreError(f"the private key and certificate chain do not load "
                             f"({e.reason or e}); check that the key matches the first "
                             "certificate and ssl.key.password") from None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _reencrypted(key, chain: list) -> tuple[bytes, str]:
    """(key PEM encrypted with a fresh random password + chain PEM, that password)."""
    from cryptography.hazmat.primitives import serialization
    one_time = secrets.token_urlsafe(32)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.BestAvailableEncryption(one_time.encode()))
    certs = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    return key_pem + certs, one_time


def load_pkcs12_keystore(data: bytes, password: bytes | None, path: str):
    """(private key, [certificate, chain...]) of a PKCS12 key store."""
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        raise StoreError(f"key store {path} does not open as PKCS12 with the given "
                         "ssl.keystore.password") from None
    if key is None or cert is None:
        raise StoreError(f"key store {path} holds no private key with its certificate")
    return key, [cert, *(extra or [])]


def configure_keystore(ctx: ssl.SSLContext, get: Getter, *, prefix: str = "ssl.") -> bool:
    """Load this side's own key and certificate chain into ctx; False when none is set."""
    kind = _text(get(prefix + "keystore.type"))
    location = _text(get(prefix + "keystore.location"))
    inline_key = _text(get(prefix + "keystore.key"))
    inline_chain = _text(get(prefix + "keystore.certificate.chain"))
    key_password = _text(get(prefix + "key.password"))
    store_password = get(prefix + "keystore.password")
    if inline_key or inline_chain:
        if location:
            raise StoreError("set either ssl.keystore.location or ssl.keystore.key with "
                             "ssl.keystore.certificate.chain, not both")
        if kind is not None and kind.upper() != "PEM":
            raise StoreError("ssl.keystore.key and ssl.keystore.certificate.chain need "
                             f"ssl.keystore.type=PEM (it is {kind})")
        if not (inline_key and inline_chain):
            raise StoreError("ssl.keystore.key and ssl.keystore.certificate.chain go together: "
                             "set both")
        load_chain_from_pem(ctx, (inline_key.strip() + "\n" + inline_chain.strip() + "\n")
                             .encode("utf-8"), key_password)
        return True
    if not location:
        return False
    kind = (kind or "JKS").upper()
    if kind == "PEM":
        try:
            ctx.load_cert_chain(location, password=key_password)
        except FileNotFoundError:
            raise StoreError(f"key store {location} does not exist") from None
        except ssl.SSLError as e:
            raise StoreError(f"key store {location} (PEM) does not load ({e.reason or e}); it "
                             "must hold the private key and its certificate chain; check "
                             "ssl.key.password") from None
        return True
    if kind not in ("PKCS12", "JKS"):
        raise StoreError(f"ssl.keystore.type={kind} is not supported; use PEM or PKCS12")
    data = _read(location, "key store")
    _refuse_jks(data, "key store", location)
    key, chain = load_pkcs12_keystore(data, _password_bytes(store_password), location)
    pem, one_time = _reencrypted(key, chain)
    load_chain_from_pem(ctx, pem, one_time)
    return True


def configure_truststore(ctx: ssl.SSLContext, get: Getter, *, prefix: str = "ssl.") -> bool:
    """Load the CAs to trust into ctx; False when no trust store is set."""
    kind = _text(get(prefix + "truststore.type"))
    location = _text(get(prefix + "truststore.location"))
    inline = _text(get(prefix + "truststore.certificates"))
    if inline:
        if location:
            raise StoreError("set either ssl.truststore.location or "
                             "ssl.truststore.certificates, not both")
        try:
            ctx.load_verify_locations(cadata=inline)
        except ssl.SSLError as e:
            raise StoreError(f"ssl.truststore.certificates does not load ({e.reason or e}); "
                             "it must hold PEM certificates") from None
        return True
    if not location:
        return False
    kind = (kind or "JKS").upper()
    if kind == "PEM":
        try:
            ctx.load_verify_locations(cafile=location)
        except FileNotFoundError:
            raise StoreError(f"trust store {location} does not exist") from None
        except ssl.SSLError as e:
            raise StoreError(f"trust store {location} (PEM) does not load "
                             f"({e.reason or e})") from None
        return True
    if kind not in ("PKCS12", "JKS"):
        raise StoreError(f"ssl.truststore.type={kind} is not supported; use PEM or PKCS12")
    data = _read(location, "trust store")
    _refuse_jks(data, "trust store", location)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        store = pkcs12.load_pkcs12(data, _password_bytes(get(prefix + "truststore.password")))
    except ValueError:
        raise StoreError(f"trust store {location} does not open as PKCS12 with the given "
                         "ssl.truststore.password") from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise StoreError(f"trust store {location} holds no certificates")
    ctx.load_verify_locations(cadata="".join(
        c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certs))
    return True
