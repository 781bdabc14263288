"""Named listeners, as Kafka configures them.

    listeners=PLAINTEXT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT
    advertised.listeners=PLAINTEXT://broker-1:9092,REPLICATION://10.0.0.1:9093
    inter.broker.listener.name=REPLICATION

The broker accepts connections on every listener. A Metadata, FindCoordinator or
DescribeCluster request is answered with each broker's endpoint on the listener the request
came in on (a broker without that listener is left out, as Kafka does), so clients stay on the
network they reached the cluster through. Brokers reach each other (followers fetching,
transaction markers) on `inter.broker.listener.name`. Every security protocol is served
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL: gregor/broker/security, docs/security.md), between
brokers too (gregor/broker/security/inter_broker.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import ConfigError

# Kafka's default map; listeners named after a protocol need no entry of their own.
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def parse_protocol_map(spec: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in (spec or DEFAULT_PROTOCOL_MAP).split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, sep, proto = entry.partition(":")
        if not sep or not name.strip() or not proto.strip():
            raise ConfigError(f"listener.security.protocol.map entry {entry!r} must look like "
                              "NAME:PROTOCOL")
        out[name.strip().upper()] = proto.strip().upper()
    return out


def parse_listeners(spec: str, key: str = "listeners") -> list[Listener]:
    """'NAME://host:port,...' (a bare 'host:port' is PLAINTEXT) -> listeners, in order."""
    out: list[Listener] = []
    for entry in str(spec).split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, sep, hostport = entry.partition("://")
        if not sep:
            name, hostport = "PLAINTEXT", entry
        host, sep, port = hostport.rpartition(":")
        if not sep:
            raise ConfigError(f"{key}: {entry!r} must look like NAME://HOST:PORT")
        try:
            port_no = int(port)
        except ValueError:
            raise ConfigError(f"{key}: port {port!r} of {entry!r} is not a number") from None
        if not 0 <= port_no <= 65535:
            raise ConfigError(f"{key}: port {port_no} of {entry!r} is out of range")
        out.append(Listener(name.strip().upper(), host.strip("[]"), port_no))
    if not out:
        raise ConfigError(f"{key} is empty")
    names = [lst.name for lst in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: each listener name may appear once: {spec}")
    return out


def with_first_listener_at(spec: str, hostport: str) -> str:
    """`listeners` with its first listener moved to HOST:PORT (what `--listen` does)."""
    listeners = parse_listeners(spec)
    first = parse_listeners(f"{listeners[0].name}://{hostport}", "--listen")[0]
    return ",".join(lst.url for lst in [first, *listeners[1:]])


@dataclass(frozen=True)
class ListenerConfig:
    """The broker's listeners, where it advertises each, and which one brokers use."""
    listeners: tuple[Listener, ...]
    advertised: tuple[Listener, ...]      # port 0 = the port really bound (filled at start)
    inter_broker: str
    protocols: tuple[tuple[str, str], ...] = ()   # (listener name, security protocol)

    def protocol(self, name: str) -> str:
        return dict(self.protocols).get(name, "PLAINTEXT")

    @classmethod
    def from_config(cls, config) -> "ListenerConfig":
        protocols = parse_protocol_map(config.get("listener.security.protocol.map"))
        listeners = parse_listeners(config.get("listeners"))
        for lst in listeners:
            proto = protocols.get(lst.name)
            if proto is None:
                raise ConfigError(f"listener {lst.name} has no entry in "
                                  "listener.security.protocol.map")
            if proto not in SUPPORTED_PROTOCOLS:
                raise ConfigError(f"listener {lst.name} uses {proto}; the security protocols "
                                  f"are {', '.join(SUPPORTED_PROTOCOLS)}")
        adv_spec = config.get("advertised.listeners")
        advertised = parse_listeners(adv_spec, "advertised.listeners") if adv_spec \
            else list(listeners)
        known = {lst.name for lst in listeners}
        for lst in advertised:
            if lst.name not in known:
                raise ConfigError(f"advertised.listeners names {lst.name}, which is not in "
                                  "listeners")
        inter = config.get("inter.broker.listener.name")
        inter = str(inter).upper() if inter else \
            str(config.get("security.inter.broker.protocol")).upper()
        if inter not in {lst.name for lst in advertised}:
            raise ConfigError(f"inter.broker.listener.name {inter} must be one of the "
                              f"advertised listeners ({', '.join(sorted(known))}); set "
                              "inter.broker.listener.name")
        return cls(tuple(listeners), tuple(advertised), inter,
                   tuple((lst.name, protocols[lst.name]) for lst in listeners))

    def advertise(self, bound: dict[str, tuple[str, int]], hostname: str) -> tuple[Listener, ...]:
        """The advertised listeners once bound: port 0 becomes the bound port, a wildcard host
        this machine's name."""
        out = []
        for lst in self.advertised:
            host, port = lst.host, lst.port
            b_host, b_port = bound[lst.name]
            if not port:
                port = b_port
            if host in ("", "0.0.0.0", "::"):
                host = b_host if b_host not in ("", "0.0.0.0", "::") else hostname
            out.append(Listener(lst.name, host, port))
        return tuple(out)
