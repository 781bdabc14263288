"""The client's TLS context from its configuration (options.py), built once per client.

Trust: ssl.ca.location (a PEM file or a directory of them) / ssl.ca.pem, or Java's
ssl.truststore.*; without any, the system's CAs. Own certificate (mTLS): ssl.certificate.* with
ssl.key.*, or ssl.keystore.* (PKCS12, or PEM inline). Host names are checked against the
broker's certificate unless ssl.endpoint.identification.algorithm is empty or none; certificate
verification is on unless enable.ssl.certificate.verification=false.
"""
from __future__ import annotations

import os
import ssl

from ...security.stores import (StoreError, configure_keystore, load_chain_from_pem,
                                configure_truststore)
from ...security.tls_settings import protocol_range, set_ciphers
from ..errors import ConfigError



def uses_tls(cfg) -> bool:
    return cfg["security.protocol"] in ("SSL", "SASL_SSL")


def hostname_check(cfg) -> bool:
    if cfg.get("ssl.check.hostname") is not None:
        return bool(cfg["ssl.check.hostname"])
    algorithm = (cfg.get("ssl.endpoint.identification.algorithm") or "").strip().lower()
    return algorithm not in ("", "none")


def client_context(cfg) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        if cfg.get("ssl.enabled.protocols"):
            ctx.minimum_version, ctx.maximum_version = protocol_range(
                cfg["ssl.enabled.protocols"])
        set_ciphers(ctx, cfg.get("ssl.cipher.suites"))
    except ValueError as e:
        raise ConfigError(f"config {e}") from None
    verify = bool(cfg.get("enable.ssl.certificate.verification", True))
    ctx.check_hostname = verify and hostname_check(cfg)
    ctx.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
    try:
        _trust(ctx, cfg)
        _own_certificate(ctx, cfg)
    except StoreError as e:
        raise ConfigError(str(e)) from None
    return ctx


def _trust(ctx: ssl.SSLContext, cfg) -> None:
    location = cfg.get("ssl.ca.location") or cfg.get("ssl.cafile")
    if location:
        if location == "probe":                   # librdkafka: the system's CA locations
            ctx.load_default_certs()
            return
        try:
            if os.path.isdir(location):
                ctx.load_verify_locations(capath=location)
            else:
                ctx.load_verify_locations(cafile=location)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"config 'ssl.ca.location': cannot load CA certificates from "
                              f"{location}: {getattr(e, 'strerror', None) or e}") from None
        return
    if cfg.get("ssl.ca.pem"):
        try:
            ctx.load_verify_locations(cadata=cfg["ssl.ca.pem"])
        except ssl.SSLError as e:
            raise ConfigError(f"config 'ssl.ca.pem' does not hold PEM certificates ({e})") \
                from None
        return
    if not configure_truststore(ctx, cfg.get):
        ctx.load_default_certs()


def _own_certificate(ctx: ssl.SSLContext, cfg) -> None:
    cert = cfg.get("ssl.certificate.location") or cfg.get("ssl.certfile")
    key = cfg.get("ssl.key.location") or cfg.get("ssl.keyfile")
    password = cfg.get("ssl.key.password") or cfg.get("ssl.password")
    if cert or key:
        try:
            ctx.load_cert_chain(cert or key, key, password=password)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError("config 'ssl.certificate.location' / 'ssl.key.location': the "
                              f"client certificate and key do not load "
                              f"({getattr(e, 'reason', None) or getattr(e, 'strerror', None) or e}); "
                              "check the files and ssl.key.password") from None
        return
    if cfg.get("ssl.certificate.pem") or cfg.get("ssl.key.pem"):
        if not (cfg.get("ssl.certificate.pem") and cfg.get("ssl.key.pem")):
            raise ConfigError("config 'ssl.certificate.pem' and 'ssl.key.pem' go together")
        pem = cfg["ssl.key.pem"].strip() + "\n" + cfg["ssl.certificate.pem"].strip() + "\n"
        load_chain_from_pem(ctx, pem.encode("utf-8"), password)
        return
    if cfg.get("ssl.keystore.location") and not cfg.get("ssl.keystore.type"):
        # librdkafka's ssl.keystore.location is a PKCS#12 file
        cfg = {**cfg, "ssl.keystore.type": "PKCS12"}
    configure_keystore(ctx, cfg.get)
