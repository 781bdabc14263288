"""Connections to brokers: framing, ApiVersions negotiation, correlation ids, in-flight limits.

Shaped like Kafka's Java NetworkClient: non-blocking sockets behind one selector, driven by
`poll()` from a single thread (the producer's sender thread, or the caller of `request()` for
the consumer and admin client). Each connection negotiates API versions on connect, then
pipelines up to max.in.flight.requests.per.connection requests; responses must come back in
request order, and a response with an unexpected correlation id fails the connection loudly.
"""
from __future__ import annotations

import collections
import errno
import logging
import random
import selectors
import socket
import ssl
import struct
import threading
import time
from typing import Callable

from ..protocol import messages
from ..protocol.header import decode_response
from ..protocol.throttle import client_throttles
from .frames import FramePieces, request_frame
from .config import COMMON_OPTIONS, bootstrap_list, check_common, parse_config
from .connection import (API_VERSIONS as _API_VERSIONS, AUTHENTICATING, CONNECTING,
                         DISCONNECTED, HANDSHAKING, NEGOTIATING, READY, Connection,
                         InFlightRequest)
from .connection import connect_failure_reason
from .errors import (BrokerNotReachableError, CorrelationIdMismatchError,
                     KafkaConnectionError, KafkaTimeoutError)
from .metadata import Metadata
from .network_blocking import BlockingRequests
from .security.secure_connection import connection_security

log = logging.getLogger("gregor.client.network")

_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
_UNSUPPORTED_VERSION = 35
# Bytes read per recv() call: large enough that pipelined small responses arrive in one call.
_RECV_CHUNK = 256 * 1024
# Nothing to read or write right now, on a plain or a TLS socket
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
_STARTING = (CONNECTING, HANDSHAKING, NEGOTIATING, AUTHENTICATING)

ClientResponse = InFlightRequest


class NetworkClient(BlockingRequests):
    def __init__(self, cfg: dict | None = None, *, metadata: Metadata | None = None,
                 clock: Callable[[], float] = time.monotonic, **kwargs):
        if cfg is None or "_explicit" not in cfg:
            cfg = parse_config(COMMON_OPTIONS, cfg, kwargs, ignore_unknown=True)
            check_common(cfg)
        self.cfg = cfg
        self.clock = clock
        self.client_id = cfg["client.id"]
        self.max_in_flight = cfg["max.in.flight.requests.per.connection"]
        self.request_timeout = cfg["request.timeout.ms"] / 1000.0
        self.backoff = cfg["reconnect.backoff.ms"] / 1000.0
        self.backoff_max = cfg["reconnect.backoff.max.ms"] / 1000.0
        self.connect_timeout = cfg["socket.connection.setup.timeout.ms"] / 1000.0
        self.max_frame = cfg["receive.message.max.bytes"]
        # Fast failure only before any bootstrap server ever accepted a connection; a client
        # that was connected once rides out restarts and failovers with Kafka's retries.
        boot_timeout = cfg.get("gregor.bootstrap.timeout.ms", 5000)
        self.bootstrap_timeout = None if boot_timeout < 0 else boot_timeout / 1000.0
        self.ever_connected = False
        self._born = clock()
        self._connect_errors: dict[tuple[str, int], str] = {}   # (host, port) -> why, short
        idle = cfg["connections.max.idle.ms"]
        self.max_idle = idle / 1000.0 if idle >= 0 else None
        self.metadata = metadata if metadata is not None else Metadata(cfg["metadata.max.age.ms"])
        self._security = connection_security(cfg)      # TLS / SASL, None for PLAINTEXT
        self._bootstrap = [Connection(-(i + 1), h, p)
                           for i, (h, p) in enumerate(bootstrap_list(cfg))]
        self._conns: dict[int, Connection] = {c.node_id: c for c in self._bootstrap}
        self._boot_rr = random.randrange(len(self._bootstrap))
        self._corr = 0
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._completed: list[InFlightRequest] = []
        self._metadata_in_flight = None
        self._lock = threading.RLock()
        self._closed = False

    # -- connection management -----------------------------------------------------------
    def _conn(self, node_id: int) -> Connection | None:
        c = self._conns.get(node_id)
        b = self.metadata.brokers.get(node_id) if node_id >= 0 else None
        if b is not None and (c is None or (c.host, c.port) != (b.host, b.port)):
            if c is not None:
                self._close_conn(c, KafkaConnectionError(f"node {node_id} moved"))
            c = self._conns[node_id] = Connection(node_id, b.host, b.port)
        return c

    def _initiate(self, c: Connection, now: float) -> None:
        try:
            sock = socket.socket(socket.AF_INET6 if ":" in c.host else socket.AF_INET,
                                 socket.SOCK_STREAM)
        except OSError as e:
            self._connect_failed(c, now, e)
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.cfg["socket.send.buffer.bytes"] > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                self.cfg["socket.send.buffer.bytes"])
            if self.cfg["socket.receive.buffer.bytes"] > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                self.cfg["socket.receive.buffer.bytes"])
        except OSError:
            pass
        c.sock = sock
        c.state = CONNECTING
        c.deadline = now + self.connect_timeout
        c.auth_error = None
        c.reauth_at = c.session_end = None
        c.rbuf = bytearray()
        c.frame = None
        c.out.clear()
        c.out_pos = 0
        try:
            rc = sock.connect_ex((c.host, c.port))
        except OSError as e:  # e.g. name resolution failure
            self._connect_failed(c, now, e)
            return
        if rc not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            self._connect_failed(c, now, OSError(rc, errno.errorcode.get(rc, str(rc))))
            return
        c.registered_events = selectors.EVENT_WRITE
        self._selector.register(sock, selectors.EVENT_WRITE, c)
        log.debug("connecting to node %s at %s:%s", c.node_id, c.host, c.port)

    def _connect_failed(self, c: Connection, now: float, err: Exception) -> None:
        log.debug("connection to node %s (%s:%s) failed: %s", c.node_id, c.host, c.port, err)
        if not self.ever_connected:
            self._connect_errors[(c.host, c.port)] = connect_failure_reason(err)
        self._close_conn(c, KafkaConnectionError(
            f"cannot connect to node {c.node_id} at {c.host}:{c.port}: {err}"))

    def _close_conn(self, c: Connection, err: Exception, refresh: bool = True) -> None:
        if c.sock is not None:
            try:
                self._selector.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
            c.sock = None
        was_ready = c.state == READY
        c.state = DISCONNECTED
        c.failures += 1
        # Exponential backoff with +-20% jitter so clients do not reconnect in lockstep.
        delay = min(self.backoff * (2 ** min(c.failures - 1, 30)), self.backoff_max)
        c.next_attempt = self.clock() + delay * random.uniform(0.8, 1.2)
        c.out.clear()
        c.out_pos = 0
        c.rbuf = bytearray()
        c.frame = None
        pending, c.in_flight = c.in_flight, collections.deque()
        for req in pending:
            self._complete(req, None, err)
        if refresh and (was_ready or pending):
            self.metadata.request_update()

    def _start_negotiation(self, c: Connection, now: float) -> None:
        c.state = NEGOTIATING
        v = c.av_version
        body = {"client_software_name": "gregor", "client_software_version": "0.1.0"}
        self._enqueue(c, _API_VERSIONS, v, body, None, True, now, internal=True)

    def _on_api_versions(self, c: Connection, req: InFlightRequest, body: dict) -> None:
        code = body.get("error_code", 0)
        if code == _UNSUPPORTED_VERSION:
            # The broker answered in v0 format; retry at the highest version it supports.
            theirs = {k["api_key"]: k["max_version"] for k in body.get("api_keys", [])}
            c.av_version = min(theirs.get(18, 0), req.version - 1)
            if c.av_version < 0:
                self._close_conn(c, KafkaConnectionError("broker refused every ApiVersions"))
                return
            self._start_negotiation(c, self.clock())
            return
        if code:
            self._close_conn(c, KafkaConnectionError(
                f"ApiVersions to node {c.node_id} failed with error {code}"))
            return
        c.versions = {k["api_key"]: (k["min_version"], k["max_version"])
                      for k in body.get("api_keys", [])}
        if self._security is not None and self._security.sasl is not None:
            self._security.start_sasl(self, c, self.clock())
            return
        self._authenticated(c)

    def _authenticated(self, c: Connection) -> None:
        c.state = READY
        c.failures = 0
        c.last_used = self.clock()
        log.debug("node %s ready (%d apis)", c.node_id, len(c.versions))

    def negotiated_version(self, c: Connection, api) -> int | None:
        theirs = c.versions.get(api.key)
        if theirs is None:
            return None
        hi = min(api.valid[1], theirs[1])
        return hi if hi >= max(api.valid[0], theirs[0]) else None

    # -- public non-blocking API ---------------------------------------------------------
    def ready(self, node_id: int, now: float | None = None) -> bool:
        """True when a request can be sent to node_id now; starts connecting otherwise."""
        c = self._conn(node_id)
        if c is None:
            return False
        if c.state == READY:
            now = self.clock() if now is None else now
            if c.reauth_at is not None and now >= c.reauth_at:
                self._security.renew(self, c, self.clock())     # KIP-368: not before it
                return False
            if c.throttle_until and now < c.throttle_until:
                return False         # the broker throttled us (KIP-219): wait it out
            return len(c.in_flight) < self.max_in_flight
        if c.state == DISCONNECTED:
            now = self.clock() if now is None else now
            if now >= c.next_attempt:
                self._initiate(c, now)
        return False

    def unreachable_error(self, now: float | None = None) -> BrokerNotReachableError | None:
        """The error to fail with when no bootstrap server ever accepted a connection and
        gregor.bootstrap.timeout.ms has passed since this client was made, else None."""
        if self.ever_connected or self.bootstrap_timeout is None or not self._connect_errors:
            return None
        now = self.clock() if now is None else now
        if now - self._born < self.bootstrap_timeout:
            return None
        tried = ", ".join(f"{h}:{p} ({why})" for (h, p), why in self._connect_errors.items())
        return BrokerNotReachableError(
            f"could not connect to {tried}; is a broker running there? (bootstrap.servers; "
            f"gave up after gregor.bootstrap.timeout.ms={int(self.bootstrap_timeout * 1000)})")

    def is_connected(self, node_id: int) -> bool:
        c = self._conns.get(node_id)
        return c is not None and c.state == READY

    def connection_delay(self, node_id: int, now: float) -> float:
        """Seconds until a connection attempt to node_id may start (0 if now)."""
        c = self._conns.get(node_id)
        if c is None:
            return 0.0
        if c.state == READY:
            return max(0.0, c.throttle_until - now)
        if c.state != DISCONNECTED:
            return 0.0
        return max(0.0, c.next_attempt - now)

    def in_flight_count(self, node_id: int | None = None) -> int:
        if node_id is None:
            return sum(len(c.in_flight) for c in self._conns.values())
        c = self._conns.get(node_id)
        return 0 if c is None else len(c.in_flight)

    def api_version_for(self, node_id: int, api_name: str) -> int | None:
        c = self._conns.get(node_id)
        if c is None or c.state != READY:
            return None
        return self.negotiated_version(c, messages.api(api_name))

    def send(self, node_id: int, api_name, body: dict, version: int | None = None,
             callback=None, expect_response: bool = True, now: float | None = None,
             timeout: float | None = None) -> InFlightRequest:
        """Queue a request to a READY node (check ready() first)."""
        c = self._conns.get(node_id)
        if c is None or c.state != READY:
            raise KafkaConnectionError(f"node {node_id} is not ready; call ready() first")
        api = api_name if not isinstance(api_name, str) else messages.api(api_name)
        if version is None:
            version = self.negotiated_version(c, api)
            if version is None:
                raise KafkaConnectionError(
                    f"broker node {node_id} supports no {api.name} version gregor can speak "
                    f"(ours {api.valid}, theirs {c.versions.get(api.key)})")
        now = self.clock() if now is None else now
        return self._enqueue(c, api, version, body, callback, expect_response, now,
                             timeout=timeout)

    def _enqueue(self, c, api, version, body, callback, expect_response, now, internal=False,
                 timeout=None):
        self._corr = corr = (self._corr + 1) & 0x7FFFFFFF
        frame = request_frame(api, version, corr, self.client_id, body)
        deadline = now + (self.request_timeout if timeout is None else timeout)
        req = InFlightRequest(c.node_id, api, version, corr, body, callback, expect_response,
                              now, deadline, internal)
        c.out.append(frame)
        c.last_used = now
        if expect_response:
            c.in_flight.append(req)
        self._write(c)
        if not expect_response and not c.out:
            self._complete(req, None, None)
        return req

    def wakeup(self) -> None:
        """Interrupt a poll() blocked in another thread."""
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # a wakeup is already pending (or we are closed)

    def disconnect(self, node_id: int) -> None:
        c = self._conns.get(node_id)
        if c is not None and c.state != DISCONNECTED:
            self._close_conn(c, KafkaConnectionError(f"node {node_id} disconnected by client"))

    # -- I/O ---------------------------------------------------------------------------------
    def _set_events(self, c: Connection, events: int) -> None:
        if c.sock is not None and events != c.registered_events:
            self._selector.modify(c.sock, events, c)
            c.registered_events = events

    def _write(self, c: Connection) -> None:
        if c.state not in (READY, NEGOTIATING, AUTHENTICATING) or c.sock is None:
            return
        out = c.out
        try:
            while out:
                frame = out[0]
                if type(frame) is FramePieces and isinstance(c.sock, ssl.SSLSocket):
                    out[0] = frame = b"".join(frame.parts)   # TLS has no sendmsg(): one copy
                if type(frame) is FramePieces:
                    n = c.sock.sendmsg(frame.rest(c.out_pos))
                elif c.out_pos:
                    n = c.sock.send(memoryview(frame)[c.out_pos:])
                else:
                    n = c.sock.send(frame)
                c.out_pos += n
                if c.out_pos < len(frame):
                    break
                out.popleft()
                c.out_pos = 0
        except _WOULD_BLOCK:
            pass
        except OSError as e:
            self._close_conn(c, KafkaConnectionError(
                f"lost connection to node {c.node_id} ({c.host}:{c.port}) while sending: {e}"))
            return
        self._set_events(c, selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0))

    def _read(self, c: Connection, now: float) -> None:
        sock = c.sock
        while sock is not None and c.sock is sock:
            if c.frame is not None:
                # Filling one large frame in place: no copy per chunk.
                try:
                    n = sock.recv_into(memoryview(c.frame)[c.frame_fill:])
                except _WOULD_BLOCK:
                    return
                except OSError as e:
                    n, err = -1, e
                if n <= 0:
                    self._lost(c, None if n == 0 else err)
                    return
                c.frame_fill += n
                if c.frame_fill == len(c.frame):
                    frame, c.frame = c.frame, None
                    self._on_frame(c, frame, now)
                continue
            try:
                data = sock.recv(_RECV_CHUNK)
            except _WOULD_BLOCK:
                return
            except OSError as e:
                self._lost(c, e)
                return
            if not data:
                self._lost(c, None)
                return
            rbuf = c.rbuf
            rbuf += data
            pos = 0
            end = len(rbuf)
            while end - pos >= 4:
                size = _SIZE.unpack_from(rbuf, pos)[0]
                if size < 4 or size > self.max_frame:
                    self._close_conn(c, KafkaConnectionError(
                        f"node {c.node_id} sent a frame of {size} bytes (limit "
                        f"receive.message.max.bytes={self.max_frame}); closing the connection"))
                    return
                if end - pos - 4 >= size:
                    frame = bytes(rbuf[pos + 4:pos + 4 + size])
                    pos += 4 + size
                    self._on_frame(c, frame, now)
                    if c.sock is not sock:
                        return
                    continue
                if size > _RECV_CHUNK:
                    # Large frame: allocate it once (bounded by max_frame and by what the
                    # peer announced) and receive straight into it.
                    have = end - pos - 4
                    c.frame = bytearray(size)
                    c.frame[:have] = rbuf[pos + 4:end]
                    c.frame_fill = have
                    pos = end
                break
            del rbuf[:pos]

    def _lost(self, c: Connection, err) -> None:
        why = "closed the connection" if err is None else f"connection error: {err}"
        self._close_conn(c, KafkaConnectionError(
            f"node {c.node_id} ({c.host}:{c.port}) {why} with {len(c.in_flight)} requests "
            "in flight"))

    def _on_frame(self, c: Connection, frame, now: float) -> None:
        corr = _CORR.unpack_from(frame, 0)[0]
        if not c.in_flight:
            self._close_conn(c, CorrelationIdMismatchError(
                f"node {c.node_id} sent a response (correlation id {corr}) with no request "
                "outstanding; closing the connection"))
            return
        req = c.in_flight[0]
        if corr != req.correlation_id:
            log.error("node %s answered correlation id %s, expected %s: closing connection",
                      c.node_id, corr, req.correlation_id)
            self._close_conn(c, CorrelationIdMismatchError(
                f"node {c.node_id} answered correlation id {corr} but {req.correlation_id} "
                f"({req.api.name}) was the oldest outstanding request; the connection is "
                "out of sync and was closed"))
            return
        c.in_flight.popleft()
        try:
            if req.api is _API_VERSIONS:
                body = self._decode_api_versions(req, frame)
            else:
                body = decode_response(req.api, req.version, frame)[1]
        except Exception as e:  # hostile or broken bytes: typed error, closed connection
            c.in_flight.appendleft(req)
            self._close_conn(c, KafkaConnectionError(
                f"cannot decode {req.api.name} v{req.version} response from node "
                f"{c.node_id}: {e}"))
            return
        if req.api is _API_VERSIONS and c.state == NEGOTIATING:
            self._on_api_versions(c, req, body)
            return
        throttle_ms = body.get("throttle_time_ms") if type(body) is dict else None
        if throttle_ms and throttle_ms > 0 and client_throttles(req.api.key, req.version):
            # KIP-219: the broker muted this connection for that long; like Kafka's clients,
            # send it nothing meanwhile (ready() is False, connection_delay() says how long)
            c.throttle_until = max(c.throttle_until, now + throttle_ms / 1000.0)
            log.debug("node %s throttled us for %d ms (%s)", c.node_id, throttle_ms,
                      req.api.name)
        self._complete(req, body, None)

    @staticmethod
    def _decode_api_versions(req, frame):
        # Error code first: UNSUPPORTED_VERSION answers come in v0 format whatever we asked.
        if len(frame) >= 6 and struct.unpack_from(">h", frame, 4)[0] == _UNSUPPORTED_VERSION:
            return decode_response(_API_VERSIONS, 0, frame)[1]
        return decode_response(_API_VERSIONS, req.version, frame)[1]

    def _complete(self, req, body, err) -> None:
        req.body = body
        req.error = err
        req.done = True
        if req.internal:
            if req.callback is not None:
                req.callback(req)
            return
        self._completed.append(req)

    def poll(self, timeout: float) -> list[InFlightRequest]:
        """Do I/O for up to timeout seconds; returns the requests completed meanwhile (their
        callbacks already called)."""
        now = self.clock()
        self._check_timeouts(now)
        if not self._completed:
            # Wake early for the first connect or request deadline.
            for c in self._conns.values():
                if c.state in (CONNECTING, HANDSHAKING) or \
                        (c.in_flight and c.state != DISCONNECTED):
                    d = c.deadline if c.state in (CONNECTING, HANDSHAKING) else \
                        c.in_flight[0].deadline
                    timeout = min(timeout, max(0.0, d - now))
            events = self._selector.select(max(0.0, timeout))
        else:
            events = self._selector.select(0)
        now = self.clock()
        for key, mask in events:
            c = key.data
            if c is None:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except (BlockingIOError, OSError):
                    pass
                continue
            if c.state == CONNECTING:
                if mask & selectors.EVENT_WRITE:
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        self._connect_failed(c, now, OSError(err, errno.errorcode.get(err, "")))
                        continue
                    self.ever_connected = True
                    if self._security is not None and self._security.tls is not None:
                        self._security.start_tls(self, c, now)
                        continue
                    self._set_events(c, selectors.EVENT_READ)
                    self._start_negotiation(c, now)
                continue
            if c.state == HANDSHAKING:
                self._security.step_tls(self, c, now)
                continue
            if mask & selectors.EVENT_READ:
                self._read(c, now)
            if mask & selectors.EVENT_WRITE and c.sock is not None and c.out:
                self._write(c)
        self._check_timeouts(self.clock())
        done, self._completed = self._completed, []
        for req in done:
            if req.callback is not None:
                try:
                    req.callback(req)
                except Exception:
                    log.exception("callback of %r raised", req)
        return done

    def _check_timeouts(self, now: float) -> None:
        for c in list(self._conns.values()):
            if c.state in (CONNECTING, HANDSHAKING) and now >= c.deadline:
                self._connect_failed(c, now, KafkaTimeoutError(
                    f"no connection to node {c.node_id} at {c.host}:{c.port} within "
                    f"socket.connection.setup.timeout.ms={int(self.connect_timeout * 1000)}"))
            elif c.state in (NEGOTIATING, AUTHENTICATING) and c.in_flight and \
                    now >= c.in_flight[0].deadline:
                self._close_conn(c, KafkaTimeoutError(
                    f"node {c.node_id} did not answer {c.in_flight[0].api.name} within "
                    "request.timeout.ms"))
            elif c.state == READY and c.reauth_at is not None and now >= c.reauth_at:
                self._security.renew(self, c, now)           # KIP-368 re-authentication
            elif c.state == READY and not c.in_flight and not c.out and \
                    self.max_idle is not None and now - c.last_used >= self.max_idle:
                # connections.max.idle.ms: let go of a connection nobody uses; it reconnects
                # on demand (without backoff: nothing failed).
                self._close_conn(c, KafkaConnectionError(f"node {c.node_id} idle"), False)
                c.failures = 0
                c.next_attempt = now
            elif c.in_flight and c.state == READY and now >= c.in_flight[0].deadline:
                req = c.in_flight[0]
                # A timed-out request leaves the connection in an unknown state; like Kafka's
                # client we close it and fail everything in flight on it.
                self._close_conn(c, KafkaTimeoutError(
                    f"{req.api.name} request to node {c.node_id} timed out after "
                    f"{now - req.send_time:.1f} s (request.timeout.ms="
                    f"{int(self.request_timeout * 1000)})"))

    # -- node choice, metadata -----------------------------------------------------------
    def least_loaded_node(self, now: float | None = None) -> int | None:
        """A node to send a request to: a ready one with the fewest requests in flight, else
        one that is connecting, else one whose reconnect backoff has passed (bootstrap list
        rotated so every address gets tried)."""
        now = self.clock() if now is None else now
        known = [self._conn(n) for n in self.metadata.brokers]
        best, best_load = None, None
        for c in known:
            if c.state == READY and len(c.in_flight) < self.max_in_flight and \
                    now >= c.throttle_until:
                if best is None or len(c.in_flight) < best_load:
                    best, best_load = c, len(c.in_flight)
        if best is not None:
            return best.node_id
        for c in known + self._bootstrap:
            if c.state in _STARTING:
                return c.node_id
        for c in known:
            if c.state == DISCONNECTED and now >= c.next_attempt:
                return c.node_id
        n = len(self._bootstrap)
        for i in range(n):
            c = self._bootstrap[(self._boot_rr + i) % n]
            if c.state == READY and len(c.in_flight) < self.max_in_flight and \
                    now >= c.throttle_until:
                return c.node_id
        for i in range(n):
            c = self._bootstrap[(self._boot_rr + i) % n]
            if c.state == DISCONNECTED and now >= c.next_attempt:
                self._boot_rr = (self._boot_rr + i + 1) % n
                return c.node_id
        return None

    def time_to_next_attempt(self, now: float) -> float:
        """Seconds until some node leaves its reconnect backoff."""
        waits = [c.next_attempt - now for c in list(self._conns.values())
                 if c.state == DISCONNECTED]
        return max(0.0, min(waits)) if waits else 0.0

    def metadata_request_body(self, version: int) -> dict:
        topics = self.metadata.tracked_topics
        if topics is None:
            tl = [] if version == 0 else None
        else:
            tl = [{"name": t} for t in topics]
        return {"topics": tl,
                "allow_auto_topic_creation": self.metadata.allow_auto_topic_creation,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}

    def maybe_update_metadata(self, now: float) -> float:
        """Send a Metadata request if the cache is due; returns seconds until the next check."""
        md = self.metadata
        if self._metadata_in_flight is not None:
            return self.request_timeout
        wait = md.time_to_next_update(now)
        if wait > 0:
            return wait
        md.retire_idle(now)          # metadata.max.idle.ms: idle topics are not asked for
        node = self.least_loaded_node(now)
        if node is None:
            return max(self.time_to_next_attempt(now), 0.005)
        if not self.ready(node, now):
            return self.connect_timeout if self.is_connecting(node) else 0.005
        api = messages.api("Metadata")
        version = self.api_version_for(node, "Metadata")
        c = self._conns[node]

        def done(req):
            self._metadata_in_flight = None
            if req.error is None:
                md.update(req.body, self.clock())
        self._metadata_in_flight = self._enqueue(
            c, api, version, self.metadata_request_body(version), done, True, now,
            internal=True)
        return self.request_timeout

    def is_connecting(self, node_id: int) -> bool:
        c = self._conns.get(node_id)
        return c is not None and c.state in _STARTING

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for c in list(self._conns.values()):
            if c.sock is not None:
                self._close_conn(c, KafkaConnectionError("client closed"))
        try:
            self._selector.unregister(self._wake_r)
        except (KeyError, ValueError):
            pass
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
