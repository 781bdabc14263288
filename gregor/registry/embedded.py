"""The registry inside a broker's process (`schema.registry.listeners`), on its event loop.

It stays a Kafka client of the cluster: it connects to the broker's own first listener (or
`schema.registry.kafkastore.bootstrap.servers`), with the client settings of
`schema.registry.kafkastore.config.file` when that listener is secured. Nothing in the broker
knows about it beyond starting and stopping it.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from .server import SchemaRegistry


class EmbeddedConfigError(ValueError):
    pass


def parse_listener(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
        raise EmbeddedConfigError(f"schema.registry.listeners={url!r}: expected "
                                  "http://HOST:PORT (or https://HOST:PORT)")
    return parts.scheme, parts.hostname, parts.port


def registry_for(config, broker_host: str, broker_port: int) -> SchemaRegistry | None:
    """The registry `config` (the broker's settings) asks for, not started; or None."""
    listener = config.get("schema.registry.listeners")
    if not listener:
        return None
    scheme, host, port = parse_listener(listener.split(",")[0])
    if scheme == "https":
        raise EmbeddedConfigError("an embedded registry serves http only; run `gregor "
                                  "registry --tls-cert ...` for HTTPS")
    bootstrap = config.get("schema.registry.kafkastore.bootstrap.servers") or \
        f"{broker_host}:{broker_port}"
    client = {"bootstrap.servers": bootstrap}
    path = config.get("schema.registry.kafkastore.config.file")
    if path:
        from ..broker.config import parse_properties
        with open(path, encoding="utf-8") as f:
            client.update(parse_properties(f.read()))
    return SchemaRegistry(client, host, port)
