"""The network layer: an asyncio server speaking size-prefixed Kafka frames.

One `Connection` (an asyncio.BufferedProtocol) per client. Bytes are read straight into the
connection's ReceiveBuffer (receive_buffer.py), which grows with what has arrived; frames are
cut from it as views, the header is peeked, the body decoded by the API's schema and handed to
the handler registered for that API key. A handler returns one of:

- a response body (dict): the response is ready now;
- an asyncio Future resolving to a body: the response waits (e.g. in the purgatory);
- NO_RESPONSE: nothing is sent (Produce with acks=0);
- or raises CloseConnection: responses already queued are written, then the connection closes.

Responses leave in request order on each connection, whatever order their futures complete in;
requests may be pipelined up to `queued.max.requests` in flight per connection.

Hostile input (a negative or oversized size prefix, an unknown API key, an unsupported version,
an undecodable body) gets one log line and a closed connection; the server carries on. A
connection holds a buffer of at most twice the bytes arrived of the frame under way (at least
64 KiB), never what a size prefix declares, and a frame is at most socket.request.max.bytes.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from typing import Any, Callable

try:
    from fcntl import ioctl
    from termios import FIONREAD
except ImportError:                   # not POSIX: growth counts only the bytes read
    ioctl = FIONREAD = None

from ..protocol.header import decode_request, encode_response, peek_request_header
from ..protocol.primitives import DecodeError
from .receive_buffer import ReceiveBuffer
from .security.principal import ANONYMOUS, BROKER_SELF
from .response_frames import encode_response_parts

log = logging.getLogger("gregor.broker.server")

# LeaderAndIsr, StopReplica, UpdateMetadata: taken even while refusing clients
CONTROLLER_APIS = frozenset({4, 5, 6})

NO_RESPONSE = object()
_HTTP_PREFIXES = (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN")
_TLS_HANDSHAKE = 0x16
_INT = struct.Struct("i")
_FETCH = 1        # API keys whose responses carry record batches, written without copying them
_RECORD_RESPONSES = frozenset((_FETCH, 78))            # Fetch, ShareFetch
# Frames at least this large reserve their declared size from the server's memory budget
# (queued.max.request.bytes) while they arrive; smaller ones are not worth the bookkeeping.
_LARGE_FRAME = 64 * 1024


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection (after earlier responses)."""


class RequestContext:
    """What a handler knows about the request besides its body."""

    __slots__ = ("connection", "api", "api_key", "api_version", "correlation_id", "client_id",
                 "received")

    def __init__(self, connection, api, header, received: float):
        self.connection = connection
        self.api = api
        self.api_key = header.api_key
        self.api_version = header.api_version
        self.correlation_id = header.correlation_id
        self.client_id = header.client_id
        self.received = received

    @property
    def peer(self) -> str:
        return self.connection.peer if self.connection is not None else "local"

    @property
    def listener(self) -> str | None:
        """The listener the request came in on (None for in-process calls)."""
        return self.connection.listener if self.connection is not None else None

    @property
    def principal(self):
        """Who sent it (a KafkaPrincipal): User:ANONYMOUS until the connection authenticates;
        BROKER_SELF for requests the broker makes to itself without the network."""
        return self.connection.principal if self.connection is not None else BROKER_SELF

    @property
    def client_host(self) -> str:
        """The client's IP address as text (what ACL host patterns match), "" in-process."""
        return self.connection.client_host if self.connection is not None else ""


class Handler:
    """One API key's handler: versions we serve and the function that serves them."""

    __slots__ = ("api", "min_version", "max_version", "handle")

    def __init__(self, api, min_version: int, max_version: int, handle: Callable):
        self.api = api
        self.min_version = min_version
        self.max_version = max_version
        self.handle = handle


class _Pending:
    __slots__ = ("handler", "version", "correlation_id", "result", "started")

    def __init__(self, handler, version, correlation_id, result, started):
        self.handler = handler
        self.version = version
        self.correlation_id = correlation_id
        self.result = result
        self.started = started


class Connection(asyncio.BufferedProtocol):
    def __init__(self, server: "Server", listener: str = "PLAINTEXT"):
        self.server = server
        self.listener = listener             # name of the listener it came in on
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = ""
        self.principal = ANONYMOUS           # replaced when the connection authenticates
        self.authz_memo = None               # allowed ACL decisions (security/checks.py)
        self.protocol = "PLAINTEXT"          # the listener's security protocol
        # SASL listeners: the authentication gate every frame passes (security/gate.py) until
        # the connection is authenticated for good; None otherwise
        self.gate = None
        self.frame_limit = server.max_request_bytes
        self.frame_limit_name = "socket.request.max.bytes"
        self.rx = ReceiveBuffer()
        self._fd = -1
        self._reserved = 0                   # budget held by the large frame under way
        self.paused_for_memory = False
        self.pending: deque[_Pending] = deque()
        self.closed = False
        self.close_when_drained = False
        self.paused_for_queue = False
        self.paused_for_writes = False
        self.stopped_reading = False
        self.paused_for_throttle = False     # muted by a quota (KIP-219)
        self._throttle_timer = None
        self.last_active = time.monotonic()

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.client_host = str(peer[0]) if isinstance(peer, tuple) else ""
        srv = self.server
        if srv.stopping:
            transport.abort()
            self.closed = True
            return
        if len(srv.connections) >= srv.max_connections:
            log.warning("refusing connection from %s: max.connections=%d reached",
                        self.peer, srv.max_connections)
            self.closed = True
            transport.abort()
            return
        if srv.quotas is not None and not srv.quotas.admit(self, transport):
            self.closed = True               # over connection_creation_rate: closed later
            return
        srv.connections.add(self)
        srv.metrics.connection_opened()
        if srv.security is not None and not srv.security.on_connect(self):
            self.close(None)                 # e.g. a certificate no mapping rule applies to
            return
        # Responses can be large (fetch); let the transport buffer a few of them before
        # asking us to stop reading from this client.
        transport.set_write_buffer_limits(high=srv.write_buffer_high)
        sock = transport.get_extra_info("socket")
        # (under TLS the socket's byte count is of encrypted bytes: no growth hint from it)
        if ioctl is not None and sock is not None and \
                transport.get_extra_info("ssl_object") is None:
            self._fd = sock.fileno()
            self.rx.waiting = self._socket_waiting

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        if self in self.server.connections:
            self.server.connections.discard(self)
            self.server.metrics.connection_closed()
        # Delayed operations of this connection still complete in their purgatory (the
        # broker's bookkeeping needs that); their responses have nowhere to go.
        self.pending.clear()
        self.rx.clear()
        if self._reserved:
            self.server.release(self._reserved)
            self._reserved = 0
        for hook in self.server.connection_lost_hooks:
            try:                 # what lives with the connection (share sessions) goes too
                hook(self)
            except Exception:
                log.exception("a connection-lost hook failed")

    def pause_writing(self) -> None:
        self.paused_for_writes = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.paused_for_writes = False
        self._update_reading()

    def _socket_waiting(self) -> int:
        """Bytes that have arrived in the socket and wait to be read: a large frame's buffer
        may grow to what has really arrived at once instead of doubling read by read."""
        if self.closed:
            return 0
        try:
            return _INT.unpack(ioctl(self._fd, FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return 0

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.rx.writable()

    def buffer_updated(self, nbytes: int) -> None:
        self.rx.received(nbytes)
        if self.closed:
            return
        self.last_active = time.monotonic()
        self.server.metrics.bytes_in(nbytes)
        self._cut_frames()

    def _cut_frames(self) -> None:
        """Hand on every complete frame received, in order, while reading is not paused."""
        rx = self.rx
        srv = self.server
        while not self.stopped_reading and not self.closed:
            have = rx.pending()
            if have < 4:
                return
            size = rx.peek_size()
            if size < 0 or size > self.frame_limit:
                self._hostile_size(size, rx.prefix())
                return
            if have - 4 < size:
                if size >= _LARGE_FRAME and not self._reserved:
                    if not srv.reserve(size):
                        # Other clients' large frames fill the memory budget: stop reading
                        # from this one until they are done (what arrived stays in rx).
                        self.paused_for_memory = True
                        srv.memory_waiters.append(self)
                        self._update_reading()
                        return
                    self._reserved = size
                return
            self._handle_frame(rx.take(size))
            if self._reserved:             # it was this frame's
                srv.release(self._reserved)
                self._reserved = 0

    # -- requests -------------------------------------------------------------------------

    def _hostile_size(self, size: int, prefix: bytes) -> None:
        if prefix in _HTTP_PREFIXES:
            what = f"what looks like an HTTP request ({prefix!r}); this port speaks Kafka"
        elif prefix and prefix[0] == _TLS_HANDSHAKE and "SSL" not in self.protocol:
            what = (f"what looks like a TLS handshake; listener {self.listener} is "
                    f"{self.protocol}")
        elif size < 0:
            what = f"a negative frame size {size}"
        else:
            what = f"a frame of {size} bytes, over {self.frame_limit_name}={self.frame_limit}"
        self.close(f"sent {what}")

    def _handle_frame(self, frame: bytes) -> None:
        if self.gate is not None and not self.gate.admits(frame):
            return                           # an authentication frame, answered by the gate
        srv = self.server
        started = time.perf_counter()
        try:
            api_key, version, corr = peek_request_header(frame)
        except DecodeError as e:
            self.close(f"sent an undecodable request header: {e}")
            return
        if srv.refusing and api_key not in CONTROLLER_APIS:
            self.close(f"sent a request while this broker refuses clients ({srv.refusing})")
            return
        handler = srv.handlers.get(api_key)
        if handler is None:
            self.close(f"sent API key {api_key}, which this broker does not implement")
            return
        if not handler.min_version <= version <= handler.max_version:
            if srv.unsupported_version_response is not None and api_key == 18:
                # ApiVersions at a version we do not know: answer in v0 format with error 35
                # and our table, so the client can retry at a version we speak.
                self._enqueue(handler, 0, corr, srv.unsupported_version_response(), started)
                return
            self.close(f"sent {handler.api.name} v{version}; this broker serves "
                       f"v{handler.min_version}-v{handler.max_version}")
            return
        try:
            # records fields (Produce) stay views of the frame: no copy of the batches
            header, body = decode_request(handler.api, frame, view_records=True)
        except (DecodeError, ValueError, UnicodeDecodeError) as e:
            self.close(f"sent a {handler.api.name} v{version} request that does not decode: {e}")
            return
        srv.metrics.request(api_key)
        ctx = RequestContext(self, handler.api, header, started)
        quotas = srv.quotas                  # None unless a client quota is configured
        try:
            if quotas is not None:
                result = quotas.handle(handler, ctx, body, len(frame), srv.interceptor)
            elif srv.interceptor is None:
                result = handler.handle(ctx, body)
            else:               # a test's fault injection (gregor/testing/interceptor.py)
                result = srv.interceptor(handler, ctx, body)
        except CloseConnection as e:
            self.close_after_pending(str(e))
            return
        except Exception:
            log.exception("%s v%d from %s failed; closing the connection",
                          handler.api.name, version, self.peer)
            srv.metrics.error(api_key)
            self.close_after_pending("")
            return
        if result is NO_RESPONSE:
            srv.metrics.latency(api_key, time.perf_counter() - started)
            return
        self._enqueue(handler, version, corr, result, started)

    def _enqueue(self, handler, version, corr, result, started) -> None:
        if not self.pending and not isinstance(result, asyncio.Future):
            self._write(handler, version, corr, result, started)
            return
        self.pending.append(_Pending(handler, version, corr, result, started))
        if isinstance(result, asyncio.Future):
            result.add_done_callback(self._on_result)
        if len(self.pending) >= self.server.max_in_flight:
            self.paused_for_queue = True
            self._update_reading()
        self._drain()

    def _on_result(self, _fut) -> None:
        self._drain()

    def _drain(self) -> None:
        pending = self.pending
        out: list = []              # frames ready now: written with one writelines()
        while pending and not self.closed:
            head = pending[0]
            res = head.result
            if isinstance(res, asyncio.Future):
                if not res.done():
                    break
                if res.cancelled():
                    pending.popleft()
                    self._flush_out(out)
                    self.close(f"{head.handler.api.name} was cancelled (broker shutting down)")
                    return
                exc = res.exception()
                if exc is not None:
                    pending.popleft()
                    log.error("%s from %s failed: %r", head.handler.api.name, self.peer, exc,
                              exc_info=exc)
                    self._flush_out(out)
                    self.close("")
                    return
                res = res.result()
            pending.popleft()
            self._write(head.handler, head.version, head.correlation_id, res, head.started,
                        out)
        self._flush_out(out)
        if self.paused_for_queue and len(pending) < self.server.max_in_flight // 2 + 1:
            self.paused_for_queue = False
            self._update_reading()
        if not pending and self.close_when_drained and not self.closed:
            self.close(None)

    def _flush_out(self, out: list) -> None:
        # Responses that became ready together (pipelined requests answered by one fsync
        # round) leave in one system call instead of one each.
        if out and not self.closed:
            self.transport.writelines(out)

    def _write(self, handler, version, corr, body, started, out: list | None = None) -> None:
        """Send one response, or append its frame (parts) to out for the caller to send."""
        if self.closed:
            return
        srv = self.server
        try:
            if isinstance(body, (bytes, bytearray)):
                parts = [body]
            elif handler.api.key in _RECORD_RESPONSES:
                parts = encode_response_parts(handler.api, version, corr, body)
            else:
                parts = [encode_response(handler.api, version, corr, body)]
        except Exception:
            log.exception("could not encode the %s v%d response for %s; closing the connection",
                          handler.api.name, version, self.peer)
            self.close("")
            return
        if out is not None:
            out.extend(parts)
        elif len(parts) == 1:
            self.transport.write(parts[0])
        else:
            self.transport.writelines(parts)
        srv.metrics.bytes_out(sum(len(p) for p in parts) if len(parts) > 1 else len(parts[0]))
        srv.metrics.latency(handler.api.key, time.perf_counter() - started)

    # -- flow control and closing ---------------------------------------------------------

    def throttle(self, ms: int) -> None:
        """Read nothing more from this client for ms milliseconds (a quota's throttle)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000.0
        if self._throttle_timer is not None:
            if self._throttle_timer.when() >= until:
                return
            self._throttle_timer.cancel()
        self._throttle_timer = loop.call_at(until, self._end_throttle)
        self.paused_for_throttle = True
        self._update_reading()

    def _end_throttle(self) -> None:
        self._throttle_timer = None
        self.paused_for_throttle = False
        self._update_reading()

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        stop = (self.paused_for_queue or self.paused_for_writes or self.paused_for_memory
                or self.paused_for_throttle or self.close_when_drained or self.server.stopping)
        if stop and not self.stopped_reading:
            self.stopped_reading = True
            self.transport.pause_reading()
        elif not stop and self.stopped_reading:
            self.stopped_reading = False
            self.transport.resume_reading()
            if self.rx.pending():
                # Frames that arrived before we paused are still waiting in the buffer.
                asyncio.get_running_loop().call_soon(self._cut_frames)

    def close_after_pending(self, reason: str) -> None:
        """Write the responses already owed, then close."""
        if reason:
            log.warning("closing connection from %s: %s", self.peer, reason)
        self.close_when_drained = True
        self.stopped_reading = True
        if self.transport is not None:
            self.transport.pause_reading()
        self._drain()

    def close(self, reason: str | None) -> None:
        if self.closed:
            return
        if reason:
            log.warning("closing connection from %s: it %s", self.peer, reason)
        self.closed = True
        self.pending.clear()
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self.pending


class Server:
    """Accepts connections and routes frames to handlers."""

    def __init__(self, handlers: dict[int, Handler], metrics, *, max_request_bytes: int,
                 max_connections: int, max_in_flight: int, idle_timeout_s: float,
                 max_buffered_bytes: int = 512 * 1024 * 1024,
                 unsupported_version_response: Callable[[], Any] | None = None,
                 socket_send_buffer: int = -1, socket_receive_buffer: int = -1):
        self.handlers = handlers
        self.metrics = metrics
        self.connection_lost_hooks: list = []      # hook(connection) once one has closed
        self.max_request_bytes = max_request_bytes
        self.max_connections = max_connections
        self.max_in_flight = max(1, max_in_flight)
        self.idle_timeout_s = idle_timeout_s
        self.unsupported_version_response = unsupported_version_response
        self.socket_send_buffer = socket_send_buffer
        self.socket_receive_buffer = socket_receive_buffer
        # A few MiB of unsent responses per connection before we stop reading its requests.
        self.write_buffer_high = 4 * 1024 * 1024
        # Budget for large requests being received, across all connections (a frame is
        # reserved whole when its first bytes arrive); never below one largest frame.
        self.max_buffered_bytes = max(max_buffered_bytes, max_request_bytes)
        self.buffered_bytes = 0
        self.memory_waiters: deque[Connection] = deque()
        self.connections: set[Connection] = set()
        self.stopping = False
        # set while a cluster member is cut off from ZooKeeper: requests are refused (the
        # connection closed) so clients go to brokers whose view of the cluster is current;
        # only the controller's requests, which make it current again, are taken; holds why
        self.refusing = ""
        # gregor.testing's fault injection: called instead of the handler when set
        self.interceptor: Callable | None = None
        # the quota enforcer (gregor/broker/quotas) while any client quota is configured
        self.quotas = None
        # per-listener TLS and SASL (security/listener_security.py); None: all PLAINTEXT
        self.security = None
        self._servers: list[asyncio.AbstractServer] = []
        self._idle_task: asyncio.Task | None = None

    def reserve(self, n: int) -> bool:
        if self.buffered_bytes + n > self.max_buffered_bytes:
            return False
        self.buffered_bytes += n
        return True

    def release(self, n: int) -> None:
        self.buffered_bytes -= n
        waiters, self.memory_waiters = self.memory_waiters, deque()
        for conn in waiters:          # each retries its reservation; failures queue again
            if not conn.closed:
                conn.paused_for_memory = False
                conn._update_reading()

    async def start(self, host: str, port: int, listener: str = "PLAINTEXT",
                    ssl=None) -> tuple[str, int]:
        """Listen on host:port; connections accepted there belong to the named listener
        (TLS with the ssl context, when given). Called once per listener."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Connection(self, listener), host, port,
                                          reuse_address=True, backlog=1024, ssl=ssl)
        self._servers.append(server)
        sock = server.sockets[0]
        import socket as _socket
        for opt, val in ((_socket.SO_SNDBUF, self.socket_send_buffer),
                         (_socket.SO_RCVBUF, self.socket_receive_buffer)):
            if val and val > 0:
                try:
                    sock.setsockopt(_socket.SOL_SOCKET, opt, val)
                except OSError:
                    pass
        if self._idle_task is None:
            self._idle_task = loop.create_task(self._close_idle())
        addr = sock.getsockname()
        return addr[0], addr[1]

    async def _close_idle(self) -> None:
        # Check often enough that a connection is closed within ~1/4 of its timeout late.
        interval = max(0.05, min(self.idle_timeout_s / 4, 10.0))
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                if conn.idle and now - conn.last_active > self.idle_timeout_s:
                    log.debug("closing connection from %s: idle for more than "
                              "connections.max.idle.ms", conn.peer)
                    conn.close(None)

    def refuse_clients(self, why: str) -> None:
        """Close every connection and refuse every request but the controller's until
        accept_clients(); `why` is logged with each refusal."""
        log.warning("closing %d connection(s) and refusing clients: %s",
                    len(self.connections), why)
        self.refusing = why
        for conn in list(self.connections):
            conn.close(None)

    def accept_clients(self) -> None:
        self.refusing = ""

    def stop_accepting(self) -> None:
        self.stopping = True
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn._update_reading()

    async def drain(self, timeout: float) -> bool:
        """Wait until every connection has written the responses it owes."""
        deadline = time.monotonic() + timeout
        while any(c.pending for c in self.connections):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def close(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        for conn in list(self.connections):
            conn.close(None)
        for server in self._servers:
            server.close()
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):
                pass
