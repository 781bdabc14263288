"""The client's SASL mechanisms: PLAIN and SCRAM-SHA-256/512, with credentials from
sasl.username / sasl.password (librdkafka), sasl.plain.username / sasl.plain.password
(kafka-python's spelling) or Java's sasl.jaas.config.

A `SaslExchange` is sans-I/O: `first()` gives the first token, `next(challenge)` the following
ones (None when the client has nothing more to send), `done` when the server was verified.
"""
from __future__ import annotations

from ...security.jaas import JaasError, client_credentials
from ...security.scram import MECHANISMS, ScramClient, ScramError
from ..errors import ConfigError

SUPPORTED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def uses_sasl(cfg) -> bool:
    return cfg["security.protocol"] in ("SASL_PLAINTEXT", "SASL_SSL")


class SaslSettings:
    """Mechanism and credentials, checked once when the client is created."""

    __slots__ = ("mechanism", "username", "_password", "_oauth")

    def __init__(self, cfg):
        mech = cfg.get("sasl.mechanisms") or cfg.get("sasl.mechanism") or "GSSAPI"
        if mech not in SUPPORTED:
            raise ConfigError(f"config 'sasl.mechanism': {mech} is not supported by gregor's "
                              f"clients; use one of {', '.join(SUPPORTED)}"
                              + (" (GSSAPI is Kafka's default)" if mech == "GSSAPI" else ""))
        self._oauth = None
        if mech == "OAUTHBEARER":
            from .oauthbearer import UnsecuredToken
            self._oauth = UnsecuredToken(cfg)
            self.mechanism, self.username, self._password = mech, self._oauth.principal, None
            return
        user = cfg.get("sasl.username") or cfg.get("sasl.plain.username")
        password = cfg.get("sasl.password") or cfg.get("sasl.plain.password")
        if cfg.get("sasl.jaas.config") and not (user and password):
            try:
                user, password = client_credentials(cfg["sasl.jaas.config"])
            except JaasError as e:
                raise ConfigError(f"config 'sasl.jaas.config': {e}") from None
        if not user or password is None:
            raise ConfigError(f"SASL/{mech} needs credentials: set sasl.username and "
                              "sasl.password (or sasl.jaas.config with username=\"...\" "
                              "password=\"...\")")
        self.mechanism = mech
        self.username = user
        self._password = password

    def __repr__(self) -> str:
        return f"SaslSettings({self.mechanism}, user={self.username!r})"

    def exchange(self) -> "SaslExchange":
        if self._oauth is not None:
            return SaslExchange(self.mechanism, self.username, None,
                                initial=self._oauth.initial_response())
        return SaslExchange(self.mechanism, self.username, self._password)


class SaslExchange:
    def __init__(self, mechanism: str, username: str, password: str | None,
                 initial: bytes | None = None):
        self.mechanism = mechanism
        self.done = False
        self._plain = None
        self._scram = None
        if initial is not None:                      # OAUTHBEARER: one message, like PLAIN
            self._plain = initial
        elif mechanism == "PLAIN":
            self._plain = f"\0{username}\0{password}".encode("utf-8")
        else:
            self._scram = ScramClient(MECHANISMS[mechanism], username, password)
        self._step = 0

    def __repr__(self) -> str:
        return f"SaslExchange({self.mechanism}, step={self._step})"

    def first(self) -> bytes:
        self._step = 1
        if self._plain is not None:
            token, self._plain = self._plain, None
            return token
        return self._scram.first().encode("utf-8")

    def next(self, challenge: bytes) -> bytes | None:
        """The next token for the server's challenge; None when the exchange is complete.
        Raises ScramError when the server is not who it claims to be."""
        self._step += 1
        if self._scram is None:                      # PLAIN, OAUTHBEARER: one message
            if challenge and self.mechanism == "OAUTHBEARER":
                return b"\x01"      # the server's error JSON: acknowledge, it then fails us
            self.done = True
            return None
        if self._step == 2:
            return self._scram.final(challenge).encode("utf-8")
        self._scram.verify(challenge)
        self.done = True
        return None


__all__ = ["SaslSettings", "SaslExchange", "uses_sasl", "ScramError"]
