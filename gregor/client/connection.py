"""Per-connection state of the client's NetworkClient: the connection's lifecycle states, its
buffers and queues (_Conn), and the record of one request on the wire (InFlightRequest).

Plain data with no behaviour of its own; network.py drives it. Also how a connect attempt's
failure is said in a few words (connect_failure_reason).
"""
from __future__ import annotations

import collections
import errno
import socket

from ..protocol import messages

API_VERSIONS = messages.api("ApiVersions")

DISCONNECTED, CONNECTING, NEGOTIATING, READY = "disconnected", "connecting", "negotiating", "ready"
# TLS and SASL (security/secure_connection.py): after CONNECTING and after NEGOTIATING
HANDSHAKING, AUTHENTICATING = "handshaking", "authenticating"


class InFlightRequest:
    """One request on the wire (or queued to it); also the ClientResponse handed back."""

    __slots__ = ("node_id", "api", "version", "correlation_id", "request_body", "callback",
                 "expect_response", "send_time", "deadline", "body", "error", "done",
                 "internal")

    def __init__(self, node_id, api, version, correlation_id, request_body, callback,
                 expect_response, send_time, deadline, internal=False):
        self.node_id = node_id
        self.api = api
        self.version = version
        self.correlation_id = correlation_id
        self.request_body = request_body
        self.callback = callback
        self.expect_response = expect_response
        self.send_time = send_time
        self.deadline = deadline
        self.body = None       # decoded response body
        self.error = None      # exception when the request failed (disconnect, timeout, ...)
        self.done = False
        self.internal = internal  # ApiVersions / metadata requests the client makes itself

    @property
    def request(self):
        return self

    def __repr__(self):
        return (f"<{self.api.name} v{self.version} to node {self.node_id} "
                f"corr={self.correlation_id} done={self.done}>")


ClientResponse = InFlightRequest


class Connection:
    """One broker connection: socket, lifecycle state, write queue, read buffer, requests in
    flight and the API versions the broker offered."""

    __slots__ = ("node_id", "host", "port", "sock", "state", "out", "out_pos", "rbuf",
                 "frame", "frame_fill", "in_flight", "versions", "deadline", "failures",
                 "next_attempt", "last_used", "registered_events", "av_version",
                 "auth_error", "reauth_at", "session_end", "throttle_until")

    def __init__(self, node_id, host, port):
        self.node_id = node_id
        self.host = host
        self.port = port
        self.sock = None
        self.state = DISCONNECTED
        self.out = collections.deque()   # frames waiting to be written
        self.out_pos = 0                 # bytes of out[0] already written
        self.rbuf = bytearray()          # bytes read but not yet a complete frame
        self.frame = None                # body buffer of a large frame being filled
        self.frame_fill = 0
        self.in_flight = collections.deque()
        self.versions: dict[int, tuple[int, int]] = {}
        self.deadline = 0.0
        self.failures = 0
        self.next_attempt = 0.0
        self.last_used = 0.0
        self.registered_events = 0
        self.av_version = API_VERSIONS.valid[1]
        self.auth_error = None           # the last TLS / SASL failure (AuthenticationError)
        self.reauth_at = None            # when the SASL session is re-authenticated (KIP-368)
        self.session_end = None          # when the broker ends the session
        self.throttle_until = 0.0        # a broker's quota throttle: send nothing before it


_REASONS = {errno.ECONNREFUSED: "connection refused", errno.ETIMEDOUT: "timed out",
            errno.EHOSTUNREACH: "host unreachable", errno.ENETUNREACH: "network unreachable",
            errno.ECONNRESET: "connection reset", errno.EADDRNOTAVAIL: "address not available"}


def connect_failure_reason(err: BaseException) -> str:
    """A connect attempt's failure in a few words, as kcat and rpk say it."""
    if isinstance(err, socket.gaierror):
        return f"name not resolved: {err.strerror or err}"
    if isinstance(err, TimeoutError) or type(err).__name__ == "KafkaTimeoutError":
        return "timed out"
    if isinstance(err, OSError) and err.errno in _REASONS:
        return _REASONS[err.errno]
    return str(err) or type(err).__name__
