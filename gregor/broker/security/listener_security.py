"""The broker's security, listener by listener: built once at start from the configuration,
then asked by the server for every new connection (`on_connect`).

- PLAINTEXT: User:ANONYMOUS.
- SSL: TLS (tls.py); a verified client certificate makes the principal User:<mapped DN>.
- SASL_PLAINTEXT, SASL_SSL: a SaslGate holds the connection at ApiVersions / SaslHandshake /
  SaslAuthenticate until it authenticates (sasl/authenticator.py); TLS under SASL_SSL.

Every mistake in the settings is a ConfigError at start, naming the setting to fix.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ...security.jaas import JaasError, plain_users, single_entry
from ...security.scram import MECHANISMS
from ..config import ConfigError
from .gate import SaslGate
from .inter_broker import inter_broker_security
from .principal import KafkaPrincipal
from .principal_mapper import NoMatchingRule, SslPrincipalMapper
from .sasl.authenticator import SaslAuthenticator
from .sasl.oauthbearer import OAuthBearerServer, UnsecuredValidator
from .sasl.plain import PlainServer
from .sasl.scram import ScramServer
from .settings import ListenerSettings
from .tls import peer_principal_name, server_context

log = logging.getLogger("gregor.broker.security")

_DEFAULT_BUILDERS = ("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",)
SERVED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


@dataclass
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: object = None
    mapper: SslPrincipalMapper | None = None
    mechanisms: list[str] = field(default_factory=list)
    plain_users: dict = field(default_factory=dict, repr=False)
    oauth: object = None             # the OAUTHBEARER validator (unsecured, as Kafka's default)
    reauth_ms: dict = field(default_factory=dict)
    max_receive: int = 524288
    failed_delay_s: float = 0.1

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


class BrokerSecurity:
    def __init__(self, config, listener_config, credentials):
        self.credentials = credentials           # SCRAM credentials (credentials.py)
        self.listeners: dict[str, ListenerSecurity] = {}
        self.api_versions_range = (0, 3)
        builder = config.get("principal.builder.class")
        if builder and str(builder).strip() not in _DEFAULT_BUILDERS:
            raise ConfigError(f"principal.builder.class={builder}: gregor builds principals as "
                              "Kafka's DefaultKafkaPrincipalBuilder does (User:<SASL user> or "
                              "User:<mapped certificate DN>); remove the setting")
        for lst in listener_config.listeners:
            proto = listener_config.protocol(lst.name)
            self.listeners[lst.name] = self._build(config, lst.name, proto)
        # the client side of the inter-broker listener, checked here so a mistake stops the
        # broker at start (the cluster member builds its own from the same settings)
        self.inter_broker = inter_broker_security(config, listener_config)
        if config.get("zookeeper.connect"):
            from ..cluster.zk_security import zk_security
            zk_security(config)                  # the ZooKeeper login, checked the same way

    def _build(self, config, name: str, protocol: str) -> ListenerSecurity:
        sec = ListenerSecurity(name, protocol)
        settings = ListenerSettings(config, name)
        if sec.tls:
            sec.ssl_context = server_context(settings, protocol)
            if protocol == "SSL":
                try:
                    sec.mapper = SslPrincipalMapper(settings.get("ssl.principal.mapping.rules"))
                except ValueError as e:
                    raise ConfigError(str(e)) from None
        if sec.sasl:
            self._build_sasl(sec, settings)
        return sec

    def _build_sasl(self, sec: ListenerSecurity, settings: ListenerSettings) -> None:
        mechs = _list(settings.get("sasl.enabled.mechanisms"))
        unsupported = [m for m in mechs if m not in SERVED_MECHANISMS]
        if unsupported or not mechs:
            gssapi = " (GSSAPI, Kafka's default, is not supported)" if "GSSAPI" in mechs else ""
            raise ConfigError(
                f"listener {sec.name} ({sec.protocol}): sasl.enabled.mechanisms="
                f"{','.join(mechs) or '(empty)'}; gregor serves "
                f"{', '.join(SERVED_MECHANISMS)}{gssapi}: set sasl.enabled.mechanisms or "
                f"{settings.prefix}sasl.enabled.mechanisms")
        sec.mechanisms = mechs
        if "PLAIN" in mechs:
            jaas = settings.for_mechanism("PLAIN", "sasl.jaas.config")
            key = f"{settings.prefix}plain.sasl.jaas.config"
            if not jaas:
                raise ConfigError(
                    f"listener {sec.name} enables PLAIN but has no users: set {key}="
                    "'org.apache.kafka.common.security.plain.PlainLoginModule required "
                    "user_alice=\"alice-secret\";'")
            try:
                sec.plain_users = plain_users(jaas)
            except JaasError as e:
                raise ConfigError(f"{key}: {e}") from None
            if not sec.plain_users:
                raise ConfigError(f"{key} lists no user_<name>=\"<password>\" option, so no "
                                  "one could authenticate with PLAIN")
        if "OAUTHBEARER" in mechs:
            jaas = settings.for_mechanism("OAUTHBEARER", "sasl.jaas.config")
            try:
                options = single_entry(jaas).options if jaas else {}
                sec.oauth = UnsecuredValidator(options)
            except (JaasError, ValueError) as e:
                raise ConfigError(f"{settings.prefix}oauthbearer.sasl.jaas.config: {e}") from None
        for m in mechs:
            sec.reauth_ms[m] = int(settings.for_mechanism(m, "connections.max.reauth.ms") or 0)
        sec.max_receive = int(settings.get("sasl.server.max.receive.size"))
        sec.failed_delay_s = max(0, int(settings.get(
            "connection.failed.authentication.delay.ms"))) / 1000.0

    def close(self) -> None:
        self.credentials.close()

    def describe(self) -> str:
        return ", ".join(f"{s.name} ({s.protocol}"
                         f"{': ' + ','.join(s.mechanisms) if s.mechanisms else ''})"
                         for s in self.listeners.values())

    def ssl_context(self, listener: str):
        sec = self.listeners.get(listener)
        return sec.ssl_context if sec is not None else None

    def protocol(self, listener: str) -> str:
        sec = self.listeners.get(listener)
        return sec.protocol if sec is not None else "PLAINTEXT"

    # -- per connection -------------------------------------------------------------------------

    def on_connect(self, conn) -> bool:
        """Set up a new connection's identity and gate; False when it must be closed."""
        sec = self.listeners.get(conn.listener)
        if sec is None:
            return True
        conn.protocol = sec.protocol
        if sec.protocol == "SSL":
            ssl_object = conn.transport.get_extra_info("ssl_object")
            try:
                name = peer_principal_name(ssl_object, sec.mapper)
            except NoMatchingRule as e:
                log.warning("closing connection from %s: %s", conn.peer, e)
                return False
            if name is not None:
                conn.principal = KafkaPrincipal("User", name)
            log.debug("connection from %s on %s: principal %s", conn.peer, conn.listener,
                      conn.principal)
        if sec.sasl:
            auth = SaslAuthenticator(sec.mechanisms, lambda m: self._server(sec, m),
                                     reauth_ms=lambda m: sec.reauth_ms.get(m, 0),
                                     api_versions_range=self.api_versions_range)
            conn.gate = SaslGate(conn, auth, delay_s=sec.failed_delay_s,
                                 max_receive=sec.max_receive)
        return True

    def _server(self, sec: ListenerSecurity, mechanism: str):
        if mechanism == "PLAIN":
            return PlainServer(sec.plain_users.get)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(sec.oauth)
        return ScramServer(MECHANISMS[mechanism], self.credentials.credential)
