"""Kafka principals: "<type>:<name>", almost always "User:<name>".

A connection starts as User:ANONYMOUS (what Kafka gives PLAINTEXT connections and TLS ones
without a client certificate); authentication (SASL, mTLS) replaces it. Requests the broker
makes to itself (the controller's requests handled without the network) carry BROKER_SELF.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaPrincipal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "KafkaPrincipal":
        """'User:alice' -> KafkaPrincipal('User', 'alice'); the name may contain ':'."""
        kind, sep, name = str(text).partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {text!r} must look like 'User:<name>'")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
# Not a name any client can authenticate as (':' cannot start a SASL user name).
BROKER_SELF = KafkaPrincipal("User", ":broker-self")
