"""Registry fixtures: one in-process broker and one registry per module."""
from __future__ import annotations

import http.client as http_client
import json
from urllib.parse import urlsplit

import pytest

from gregor.registry.server import RegistryThread
from gregor.testing import Broker

V1 = "application/vnd.schemaregistry.v1+json"


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker):
    with RegistryThread({"bootstrap.servers": broker.bootstrap_servers}) as r:
        yield r


class Http:
    """Raw HTTP to the registry, so headers and bodies are exactly what a test sends."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def call(self, method, path, body=None, headers=None, raw: bytes | None = None):
        conn = http_client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            h = {"Accept": V1}
            if body is not None or raw is not None:
                h["Content-Type"] = V1
            h.update(headers or {})
            data = raw if raw is not None else (json.dumps(body).encode()
                                                if body is not None else None)
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            text = resp.read()
            try:
                value = json.loads(text) if text else None
            except ValueError:
                value = text
            return resp.status, value, dict(resp.getheaders())
        finally:
            conn.close()


@pytest.fixture(scope="module")
def http(registry):
    return Http(registry.url)
