"""A minimal blocking Kafka wire client: send request frames, read responses (for protocol-level
tests of any Kafka broker).

    with WireClient(broker.port) as c:
        body = c.request("Metadata", 1, {"topics": None})
"""
from __future__ import annotations

import socket
import struct

from gregor.protocol import messages
from gregor.protocol.header import decode_response, encode_request


class ConnectionClosed(Exception):
    """The broker closed the connection."""


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def send(self, api_name: str, version: int, body: dict, client_id: str = "wire-test") -> int:
        """Send one request; returns its correlation id."""
        self.correlation_id += 1
        api = messages.api(api_name)
        self.sock.sendall(encode_request(api, version, self.correlation_id, client_id, body))
        return self.correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def receive(self, api_name: str, version: int) -> tuple[int, dict]:
        """(correlation_id, body) of the next response."""
        return decode_response(messages.api(api_name), version, self.read_frame())

    def request(self, api_name: str, version: int, body: dict) -> dict:
        corr = self.send(api_name, version, body)
        got, resp = self.receive(api_name, version)
        assert got == corr, f"expected correlation id {corr}, got {got}"
        return resp

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True if the broker closes the connection within timeout (without sending more)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
