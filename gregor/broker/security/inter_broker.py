"""How this broker authenticates to the other brokers of its cluster, as Kafka's brokers do.

The inter-broker listener (`inter.broker.listener.name`, else the listener named after
`security.inter.broker.protocol`) decides the protocol of every connection a broker opens to
another: follower fetches, the controller's LeaderAndIsr / UpdateMetadata / StopReplica,
AlterPartition, ControlledShutdown and WriteTxnMarkers.

- TLS (SSL, SASL_SSL): the client side uses the listener's own ssl.* settings, as Kafka's
  brokers do: the trust store verifies the other broker's certificate, the key store is
  presented as this broker's certificate when the other side asks for one (mTLS: the broker's
  principal is then its certificate's mapped DN), and host names are checked unless
  `ssl.endpoint.identification.algorithm` is empty.
- SASL (SASL_PLAINTEXT, SASL_SSL): the mechanism is `sasl.mechanism.inter.broker.protocol`
  (Kafka's default GSSAPI is not supported: it must name PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or
  OAUTHBEARER, and be enabled on that listener), and the broker logs in with the
  username / password of that listener's JAAS entry for the mechanism,
  `listener.name.<listener>.<mechanism>.sasl.jaas.config` (else `sasl.jaas.config`): Kafka's
  brokers use the same entry as server and as client.

Every mistake is a ConfigError at start naming the setting to fix; secrets never appear in it.
"""
from __future__ import annotations

import ssl

from ..config import ConfigError
from .settings import ListenerSettings

# The listener's ssl.* settings that also make sense on the client side of a connection.
_CLIENT_TLS_KEYS = (
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip().upper() for v in value if str(v).strip()]
    return [v.strip().upper() for v in str(value).split(",") if v.strip()]


class InterBrokerSecurity:
    """The client side of the inter-broker listener: a TLS context and SASL credentials."""

    __slots__ = ("listener", "protocol", "ssl_context", "sasl")

    def __init__(self, listener: str, protocol: str, ssl_context: ssl.SSLContext | None = None,
                 sasl=None):
        self.listener = listener
        self.protocol = protocol
        self.ssl_context = ssl_context
        self.sasl = sasl                  # gregor.client.security.sasl.SaslSettings or None

    def __repr__(self) -> str:
        return f"InterBrokerSecurity({self.listener}, {self.protocol}, sasl={self.sasl!r})"

    @property
    def mechanism(self) -> str | None:
        return self.sasl.mechanism if self.sasl is not None else None

    @property
    def username(self) -> str | None:
        return self.sasl.username if self.sasl is not None else None

    @classmethod
    def plaintext(cls, listener: str = "PLAINTEXT") -> "InterBrokerSecurity":
        return cls(listener, "PLAINTEXT")

    @classmethod
    def from_config(cls, config, listeners) -> "InterBrokerSecurity":
        """From the broker's configuration and its ListenerConfig (listeners.py)."""
        name = listeners.inter_broker
        protocol = listeners.protocol(name)
        settings = ListenerSettings(config, name)
        context = _tls_context(settings, protocol) if protocol in ("SSL", "SASL_SSL") else None
        sasl = _sasl(config, settings, protocol) \
            if protocol in ("SASL_PLAINTEXT", "SASL_SSL") else None
        return cls(name, protocol, context, sasl)


def _tls_context(settings: ListenerSettings, protocol: str) -> ssl.SSLContext:
    from ...client.errors import ConfigError as ClientConfigError
    from ...client.security.tls import client_context
    cfg = {"security.protocol": protocol}
    for key in _CLIENT_TLS_KEYS:
        value = settings.get(key)
        if value is not None:
            cfg[key] = ",".join(value) if isinstance(value, (list, tuple)) else value
    try:
        return client_context(cfg)
    except ClientConfigError as e:
        raise ConfigError(f"inter-broker listener {settings.listener} ({protocol}), client side "
                          f"of connections to other brokers: {e}") from None


def _sasl(config, settings: ListenerSettings, protocol: str):
    from ...client.errors import ConfigError as ClientConfigError
    from ...client.security.sasl import SaslSettings
    listener = settings.listener
    mech = str(config.get("sasl.mechanism.inter.broker.protocol") or "GSSAPI").strip().upper()
    if mech not in SUPPORTED_MECHANISMS:
        raise ConfigError(
            f"sasl.mechanism.inter.broker.protocol={mech}: the inter-broker listener {listener} "
            f"uses {protocol}, and gregor's brokers log in to each other with "
            f"{', '.join(SUPPORTED_MECHANISMS)}"
            + (" (GSSAPI, Kafka's default, is not supported)" if mech == "GSSAPI" else "")
            + "; set sasl.mechanism.inter.broker.protocol, e.g. to SCRAM-SHA-512")
    enabled = _list(settings.get("sasl.enabled.mechanisms"))
    if mech not in enabled:
        raise ConfigError(
            f"sasl.mechanism.inter.broker.protocol={mech} must be one of the mechanisms the "
            f"inter-broker listener {listener} enables (sasl.enabled.mechanisms="
            f"{','.join(enabled) or '(empty)'}), as Kafka requires")
    jaas = settings.for_mechanism(mech, "sasl.jaas.config")
    key = f"{settings.prefix}{mech.lower()}.sasl.jaas.config"
    if not jaas:
        raise ConfigError(
            f"the brokers log in to each other with SASL/{mech} on listener {listener}, but "
            f"{key} is not set: give it this broker's username and password, e.g. "
            f"{key}='{_example_module(mech)} required username=\"broker\" "
            "password=\"...\";' (Kafka's brokers use the same JAAS entry as server and client)")
    cfg = {"security.protocol": protocol, "sasl.mechanism": mech, "sasl.jaas.config": jaas}
    try:
        return SaslSettings(cfg)
    except ClientConfigError as e:
        raise ConfigError(f"{key}: the broker's own login for SASL/{mech} to other brokers: "
                          f"{e}") from None


def _example_module(mech: str) -> str:
    from ...security.jaas import OAUTHBEARER_MODULE, PLAIN_MODULE, SCRAM_MODULE
    return {"PLAIN": PLAIN_MODULE, "OAUTHBEARER": OAUTHBEARER_MODULE}.get(mech, SCRAM_MODULE)


def inter_broker_security(config, listeners) -> InterBrokerSecurity:
    """The inter-broker security of a cluster member; PLAINTEXT on a single node, which never
    connects to another broker (Kafka checks these settings there too; gregor does not, so a
    single node may name a SASL inter-broker protocol without credentials)."""
    if not config.get("zookeeper.connect"):
        return InterBrokerSecurity.plaintext(listeners.inter_broker)
    return InterBrokerSecurity.from_config(config, listeners)
