"""The control channel of a broker process: fault injection from the test's process.

The child (`python -m gregor.testing.child`, which is `gregor broker` plus this channel)
listens on 127.0.0.1 and prints `gregor testing control on PORT`; the parent connects with
the random token it put in the child's environment (GREGOR_TESTING_CONTROL_TOKEN) and sends
calls of the child's Interceptor methods. Messages are length-prefixed pickles: both ends are
the same test run, the port is loopback only and the token is checked before anything is
unpickled from a connection, so no one else can talk to it.

intercept() functions stay in the test's process: the child forwards each request to the
parent over a second connection (the callback link) and awaits the answer off its loop.
"""
from __future__ import annotations

import asyncio
import hmac
import inspect
import itertools
import logging
import os
import pickle
import socket
import struct
import threading

log = logging.getLogger("gregor.testing.control")

TOKEN_ENV = "GREGOR_TESTING_CONTROL_TOKEN"
READY_PREFIX = "gregor testing control on "
_LEN = struct.Struct(">I")
# A control message is a method name and a few arguments, or a request log; this bounds what
# a peer can make us allocate before the token check and after.
MAX_MESSAGE = 256 * 1024 * 1024
# Methods that block (waiting for a gate) run on the connection's thread, not the loop.
WAIT_METHODS = frozenset({"gate_wait"})
_EDITED = "gregor.testing.edited"     # PASS from the parent, with the request as it left it


def send(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def recv(sock: socket.socket):
    size = _LEN.unpack(_exactly(sock, 4))[0]
    if size > MAX_MESSAGE:
        raise ConnectionError(f"control message of {size} bytes is over the limit")
    return pickle.loads(_exactly(sock, size))


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("control connection closed")
        buf += chunk
    return bytes(buf)


# -- the child's side --------------------------------------------------------------------------

class ControlServer:
    def __init__(self, interceptor, loop: asyncio.AbstractEventLoop, token: str):
        self.interceptor = interceptor
        self.loop = loop
        self.token = token.encode()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.callback: socket.socket | None = None
        self._callback_lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="gregor-testing-control").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True,
                             name="gregor-testing-control-conn").start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            offered = _exactly(conn, len(self.token) + 1)
            if not hmac.compare_digest(offered[1:], self.token):
                conn.close()
                return
            conn.settimeout(None)
            if offered[:1] == b"C":                 # the callback link for intercept()
                with self._callback_lock:
                    self.callback = conn
                conn.sendall(b"k")                  # registered: intercepts may use it now
                return
            while True:
                method, args, kwargs = recv(conn)
                try:
                    result = ("ok", self._run(method, args, kwargs))
                except BaseException as e:          # noqa: BLE001 - reported to the caller
                    result = ("err", e)
                send(conn, result)
        except (ConnectionError, OSError, EOFError):
            pass
        finally:
            if conn is not self.callback:
                conn.close()

    def _run(self, method: str, args, kwargs):
        if method.startswith("_"):
            raise AttributeError(f"no control method {method!r}")
        if method == "add_rule" and isinstance(kwargs.get("fn"), RemoteFunction):
            kwargs["fn"].server = self
        fn = getattr(self.interceptor, method)
        if method in WAIT_METHODS:
            return fn(*args, **kwargs)

        async def on_loop():
            return fn(*args, **kwargs)
        return asyncio.run_coroutine_threadsafe(on_loop(), self.loop).result(60)

    def ask(self, fn_id: int, request):
        """On an executor thread: the parent's answer to fn_id(request)."""
        with self._callback_lock:
            if self.callback is None:
                raise RuntimeError("no callback link from the test process")
            send(self.callback, (fn_id, request))
            status, value = recv(self.callback)
        if status == "err":
            raise value
        return value

    def close(self) -> None:
        try:
            self.listener.close()
        except OSError:
            pass


class RemoteFunction:
    """Stands for a test's intercept function inside the child; calling it asks the parent."""

    def __init__(self, fn_id: int):
        self.fn_id = fn_id
        self.server: ControlServer | None = None

    def __call__(self, request):
        from .request import PASS
        loop = asyncio.get_running_loop()

        async def ask():
            value = await loop.run_in_executor(None, self.server.ask, self.fn_id, request)
            if isinstance(value, tuple) and value[:1] == (_EDITED,):
                request.clear()                 # PASS with the test's edits
                request.update(value[1])
                return PASS
            return value
        return ask()

    def __getstate__(self):
        return {"fn_id": self.fn_id}

    def __setstate__(self, state):
        self.fn_id = state["fn_id"]
        self.server = None


def serve(broker, token: str) -> ControlServer:
    """Install an Interceptor on a started broker and open its control channel (on the
    broker's loop)."""
    from .interceptor import Interceptor
    interceptor = Interceptor(broker, request_log=int(os.environ.get(
        "GREGOR_TESTING_REQUEST_LOG", "1000")))
    interceptor.install(broker.server)
    return ControlServer(interceptor, asyncio.get_running_loop(), token)


# -- the parent's side ------------------------------------------------------------------------

class RemoteBackend:
    """Carries fault-injection calls to a broker process (what LoopBackend does in-process)."""

    def __init__(self, port: int, token: str):
        self.port = port
        self.token = token.encode()
        self._lock = threading.Lock()
        self._sock = self._connect(b"R")
        self._functions: dict[int, object] = {}
        self._ids = itertools.count(1)
        self._callback: socket.socket | None = None

    def _connect(self, role: bytes) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.settimeout(None)
        sock.sendall(role + self.token)
        return sock

    def call(self, method: str, *args, **kwargs):
        with self._lock:
            send(self._sock, (method, args, kwargs))
            status, value = recv(self._sock)
        if status == "err":
            raise value
        return value

    def wait(self, method: str, *args):
        sock = self._connect(b"R")            # a blocking wait gets a connection of its own
        try:
            send(sock, (method, args, {}))
            status, value = recv(sock)
        finally:
            sock.close()
        if status == "err":
            raise value
        return value

    def callable(self, fn) -> RemoteFunction:
        if self._callback is None:
            self._callback = self._connect(b"C")
            self._callback.settimeout(10)
            if _exactly(self._callback, 1) != b"k":
                raise ConnectionError("the broker process did not take the callback link")
            self._callback.settimeout(None)
            threading.Thread(target=self._answer, args=(self._callback,), daemon=True,
                             name="gregor-testing-callbacks").start()
        fn_id = next(self._ids)
        self._functions[fn_id] = fn
        return RemoteFunction(fn_id)

    def _answer(self, sock: socket.socket) -> None:
        from .request import PASS
        try:
            while True:
                fn_id, request = recv(sock)
                try:
                    value = self._functions[fn_id](request)
                    if inspect.isawaitable(value):
                        if hasattr(value, "close"):
                            value.close()
                        raise TypeError("an intercept function on a broker process must "
                                        "return its answer, not an awaitable")
                    if value is PASS:
                        value = (_EDITED, dict(request))
                    out = ("ok", value)
                except BaseException as e:      # noqa: BLE001 - raised in the child
                    out = ("err", e)
                send(sock, out)
        except (ConnectionError, OSError, EOFError):
            pass

    def close(self) -> None:
        for s in (self._sock, self._callback):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
