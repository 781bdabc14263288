"""The broker's security settings (Kafka's names and defaults) and per-listener lookups.

Every ssl.* and sasl.* setting may be given for one listener with the prefix
`listener.name.<listener name, lower case>.`; SASL settings also per mechanism:
`listener.name.<listener>.<mechanism, lower case>.sasl.jaas.config`. The most specific wins
(listener+mechanism, then listener, then the plain name), as in Kafka. `ListenerSettings` reads
them that way for one listener.
"""
from __future__ import annotations

# (name, type, default, doc): merged into BROKER_SETTINGS by gregor.broker.config.
SECURITY_SETTINGS = [
    ("ssl.keystore.type", "string", "JKS",
     "PEM, PKCS12 or JKS (Kafka's default; a PKCS12 file is read, a real JKS file is refused "
     "with the keytool command that converts it)."),
    ("ssl.keystore.location", "string", None, "The key store file (PEM: key and chain)."),
    ("ssl.keystore.password", "password", None, "Password of a PKCS12 key store."),
    ("ssl.key.password", "password", None, "Password of the private key (encrypted PEM)."),
    ("ssl.keystore.key", "password", None, "The private key in PEM, inline."),
    ("ssl.keystore.certificate.chain", "password", None, "The certificate chain in PEM, inline."),
    ("ssl.truststore.type", "string", "JKS", "PEM, PKCS12 or JKS (as ssl.keystore.type)."),
    ("ssl.truststore.location", "string", None, "CAs trusted for client certificates."),
    ("ssl.truststore.password", "password", None, "Password of a PKCS12 trust store."),
    ("ssl.truststore.certificates", "password", None, "Trusted CAs in PEM, inline."),
    ("ssl.client.auth", "string", "none",
     "none, requested or required: whether TLS clients must present a certificate. On "
     "SASL_SSL listeners only the listener-prefixed value counts, as in Kafka."),
    ("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "TLS versions accepted."),
    ("ssl.protocol", "string", "TLSv1.3", "Accepted for compatibility (see ssl.enabled.protocols)."),
    ("ssl.cipher.suites", "list", None,
     "TLS 1.2 cipher suites (OpenSSL or IANA names); default: OpenSSL's."),
    ("ssl.principal.mapping.rules", "string", "DEFAULT",
     "Client certificate DN -> principal name (RULE:pattern/replacement/[LU], DEFAULT)."),
    ("ssl.endpoint.identification.algorithm", "string", "https",
     "Host name verification when this broker connects to others (empty: off)."),
    ("principal.builder.class", "class", None, "Only Kafka's default principal builder."),
    ("sasl.enabled.mechanisms", "list", "GSSAPI",
     "SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (unsecured "
     "tokens, Kafka's default validator). GSSAPI, Kafka's default, is not supported: set this "
     "on SASL listeners."),
    ("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI",
     "SASL mechanism between brokers."),
    ("sasl.jaas.config", "password", None,
     "JAAS login module options (PLAIN's user_<name>=\"<password>\" table)."),
    ("sasl.server.max.receive.size", "int", 524288,
     "Largest frame accepted before a SASL client is authenticated."),
    ("connection.failed.authentication.delay.ms", "int", 100,
     "A connection whose authentication failed is closed after this delay (slows guessing)."),
    ("connections.max.reauth.ms", "long", 0,
     "SASL sessions last this long (KIP-368): the client re-authenticates on the connection "
     "before it ends, else the connection is closed. 0: forever."),
]

# Between the brokers of a cluster and ZooKeeper (gregor/broker/cluster/zk_security.py).
CLUSTER_SECURITY_SETTINGS = [
    ("zookeeper.set.acl", "bool", False,
     "Create znodes with Kafka's secure ACLs: everything for the brokers' ZooKeeper user, read "
     "for everyone else, nothing for others under /config/users and /config/brokers. Needs "
     "gregor.zookeeper.jaas.file or gregor.zookeeper.jaas.config."),
    ("gregor.zookeeper.jaas.file", "string", None,
     "A JAAS file whose Client section (DigestLoginModule username and password) is the "
     "brokers' ZooKeeper login (ZooKeeper's digest scheme), as Kafka's "
     "-Djava.security.auth.login.config file."),
    ("gregor.zookeeper.jaas.config", "password", None,
     "The same login entry inline: org.apache.zookeeper.server.auth.DigestLoginModule "
     "required username=\"..\" password=\"..\";"),
]

_PER_LISTENER = {s[0]: s for s in SECURITY_SETTINGS}
_PREFIX = "listener.name."
MECHANISM_SETTINGS = ("sasl.jaas.config", "connections.max.reauth.ms")


def listener_setting(name: str):
    """The (name, type, default, doc) a `listener.name.<l>.[<mech>.]<setting>` key refers to,
    or None when it refers to none."""
    if not name.startswith(_PREFIX):
        return None
    rest = name[len(_PREFIX):]
    listener, sep, tail = rest.partition(".")
    if not sep or not listener:
        return None
    if tail in _PER_LISTENER:
        return _PER_LISTENER[tail]
    mech, sep, setting = tail.partition(".")
    if sep and setting in MECHANISM_SETTINGS:
        return _PER_LISTENER[setting]
    return None


def listener_settings_set(config) -> dict:
    """{name: (name, type, default, doc)} of the listener-prefixed settings this
    configuration sets."""
    out = {}
    for name in config.values:
        spec = listener_setting(name)
        if spec is not None:
            out[name] = (name, *spec[1:])
    return out


def is_sensitive(name: str) -> bool:
    spec = _PER_LISTENER.get(name) or listener_setting(name)
    return spec is not None and spec[1] == "password"


class ListenerSettings:
    """Security settings as one listener sees them."""

    def __init__(self, config, listener: str):
        self.config = config
        self.listener = listener
        self.prefix = f"{_PREFIX}{listener.lower()}."

    def prefixed(self, name: str):
        """The listener-prefixed value only (None when not set)."""
        return self.config.get(self.prefix + name)

    def get(self, name: str):
        value = self.config.get(self.prefix + name)
        return self.config.get(name) if value is None else value

    def for_mechanism(self, mechanism: str, name: str):
        value = self.config.get(f"{self.prefix}{mechanism.lower()}.{name}")
        return self.get(name) if value is None else value
