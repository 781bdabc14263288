"""A scriptable in-process Kafka broker for network-layer tests.

It speaks the real wire format (gregor.protocol) on 127.0.0.1:<free port>, answers ApiVersions
and Metadata by itself, and hands every other request to `handler(api_name, version, body)`,
whose return value is the response body (or one of the special values below).
"""
from __future__ import annotations

import socket
import struct
import threading

from gregor.protocol import messages
from gregor.protocol.header import decode_request, encode_response, peek_request_header

NO_REPLY = object()        # swallow the request (to provoke timeouts)


class WrongCorrelation:
    """Answer with this correlation id instead of the right one."""

    def __init__(self, body, corr):
        self.body, self.corr = body, corr


class RawBytes:
    """Write these bytes instead of a response."""

    def __init__(self, data: bytes):
        self.data = data


class FakeBroker:
    def __init__(self, handler=None, *, versions: dict | None = None, max_api_versions: int = 4,
                 node_id: int = 1, topics: dict | None = None):
        self.handler = handler or (lambda api, v, body: NO_REPLY)
        # api name -> (min, max) advertised; default: whatever gregor's schema knows.
        self.versions = versions or {a.name: a.valid for a in messages.APIS.values()}
        self.max_api_versions = max_api_versions
        self.node_id = node_id
        self.topics = topics or {}           # name -> partition count
        self.requests: list[tuple[str, int]] = []
        self.api_versions_asked: list[int] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _read(self, c, n):
        buf = b""
        while len(buf) < n:
            chunk = c.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _serve(self, c):
        try:
            while True:
                size = struct.unpack(">i", self._read(c, 4))[0]
                data = self._read(c, size)
                key, version, corr = peek_request_header(data)
                api = messages.api(key)
                if api.name == "ApiVersions" and version > self.max_api_versions:
                    # What a real broker does: error 35 in v0 format, with its table.
                    self.api_versions_asked.append(version)
                    body = {"error_code": 35, "api_keys": self._table()}
                    c.sendall(encode_response(api, 0, corr, body))
                    continue
                _, body = decode_request(api, data)
                self.requests.append((api.name, version))
                if api.name == "ApiVersions":
                    self.api_versions_asked.append(version)
                    out = {"error_code": 0, "api_keys": self._table()}
                elif api.name == "Metadata":
                    out = self._metadata(body)
                else:
                    out = self.handler(api.name, version, body)
                if out is NO_REPLY:
                    continue
                if isinstance(out, RawBytes):
                    c.sendall(out.data)
                    continue
                if isinstance(out, WrongCorrelation):
                    c.sendall(encode_response(api, version, out.corr, out.body))
                    continue
                c.sendall(encode_response(api, version, corr, out))
        except (EOFError, OSError):
            pass
        finally:
            c.close()

    def _table(self):
        return [{"api_key": messages.api(n).key, "min_version": lo, "max_version": hi}
                for n, (lo, hi) in self.versions.items()]

    def _metadata(self, body):
        names = [t["name"] for t in body.get("topics") or []] or list(self.topics)
        topics = []
        for name in names:
            n = self.topics.get(name)
            if n is None:
                topics.append({"error_code": 3, "name": name, "partitions": []})
                continue
            topics.append({"error_code": 0, "name": name, "partitions": [
                {"error_code": 0, "partition_index": i, "leader_id": self.node_id,
                 "replica_nodes": [self.node_id], "isr_nodes": [self.node_id]}
                for i in range(n)]})
        return {"brokers": [{"node_id": self.node_id, "host": "127.0.0.1", "port": self.port}],
                "controller_id": self.node_id, "cluster_id": "fake", "topics": topics}

    def drop_connections(self):
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conns.clear()

    def close(self):
        self._stop = True
        self.sock.close()
        self.drop_connections()
