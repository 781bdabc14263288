"""OAUTHBEARER on the client side with an unsecured JWT (`alg: none`), for development and
tests, configured as librdkafka or the Java client configure it:

    enable.sasl.oauthbearer.unsecure.jwt=true
    sasl.oauthbearer.config=principal=alice lifeSeconds=3600 scope=read,write
or
    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
        unsecuredLoginStringClaim_sub="alice" unsecuredLoginLifetimeSeconds="3600";

A fresh token is made for every login (and re-authentication), valid lifeSeconds (3600).
"""
from __future__ import annotations

import base64
import json
import time

from ...security.jaas import JaasError, OAUTHBEARER_MODULE, single_entry
from ..errors import ConfigError


def _b64(doc: dict) -> str:
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class UnsecuredToken:
    __slots__ = ("principal", "principal_claim", "scope", "scope_claim", "life_s",
                 "extensions")

    def __init__(self, cfg):
        self.principal_claim, self.scope_claim, self.life_s = "sub", "scope", 3600.0
        self.principal, self.scope, self.extensions = None, [], {}
        jaas = cfg.get("sasl.jaas.config")
        if cfg.get("sasl.oauthbearer.config"):
            if not cfg.get("enable.sasl.oauthbearer.unsecure.jwt"):
                raise ConfigError("OAUTHBEARER: gregor's clients only make unsecured tokens; "
                                  "set enable.sasl.oauthbearer.unsecure.jwt=true")
            self._from_librdkafka(cfg["sasl.oauthbearer.config"])
        elif jaas:
            self._from_jaas(jaas)
        if not self.principal:
            raise ConfigError("OAUTHBEARER needs a principal: sasl.oauthbearer.config="
                              "\"principal=<name>\" (with enable.sasl.oauthbearer.unsecure.jwt="
                              "true), or sasl.jaas.config with unsecuredLoginStringClaim_sub")

    def _from_librdkafka(self, text: str) -> None:
        for item in text.split():
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"sasl.oauthbearer.config: {item!r} is not key=value")
            if key == "principal":
                self.principal = value
            elif key == "principalClaimName":
                self.principal_claim = value
            elif key == "scope":
                self.scope = [s for s in value.split(",") if s]
            elif key == "scopeClaimName":
                self.scope_claim = value
            elif key == "lifeSeconds":
                self.life_s = float(value)
            elif key.startswith("extension_"):
                self.extensions[key[len("extension_"):]] = value
            else:
                raise ConfigError(f"sasl.oauthbearer.config: unknown key {key!r}")

    def _from_jaas(self, text: str) -> None:
        try:
            entry = single_entry(text)
        except JaasError as e:
            raise ConfigError(f"config 'sasl.jaas.config': {e}") from None
        if entry.module != OAUTHBEARER_MODULE:
            raise ConfigError(f"OAUTHBEARER needs {OAUTHBEARER_MODULE} in sasl.jaas.config")
        o = entry.options
        self.principal_claim = o.get("unsecuredLoginPrincipalClaimName", "sub")
        self.scope_claim = o.get("unsecuredLoginScopeClaimName", "scope")
        self.principal = o.get(f"unsecuredLoginStringClaim_{self.principal_claim}")
        self.life_s = float(o.get("unsecuredLoginLifetimeSeconds", 3600))
        scope = o.get(f"unsecuredLoginListClaim_{self.scope_claim}")
        if scope:                                # the first character is the separator
            self.scope = [s for s in scope[1:].split(scope[0]) if s]
        self.extensions = {k[len("unsecuredLoginExtension_"):]: v for k, v in o.items()
                           if k.startswith("unsecuredLoginExtension_")}

    def initial_response(self, now: float | None = None) -> bytes:
        now = time.time() if now is None else now
        claims = {self.principal_claim: self.principal, "iat": now, "exp": now + self.life_s}
        if self.scope:
            claims[self.scope_claim] = self.scope
        token = f"{_b64({'alg': 'none'})}.{_b64(claims)}."
        ext = "".join(f"{k}={v}\x01" for k, v in self.extensions.items())
        return f"n,,\x01auth=Bearer {token}\x01{ext}\x01".encode("utf-8")
