"""A userspace TCP proxy for network-fault tests (no root, no tc or iptables needed), in front
of any TCP server: a gregor or Kafka broker, ZooKeeper.

    with TcpProxy(("127.0.0.1", zk_port)) as proxy:     # listens on proxy.port
        ... point a client at 127.0.0.1:proxy.port ...
        proxy.blackhole()     # connections stay open, bytes go nowhere (a cut cable)
        proxy.heal()          # bytes flow again (what was dropped stays dropped)
        proxy.cut()           # every connection closed, new ones refused until heal()
        proxy.delay(0.1)      # every chunk forwarded 100 ms late, each way (heal() ends it)

A blackhole is the harsher fault: neither side learns anything until its own timeouts fire,
as when a switch dies; a cut resets connections at once, as when a process or host is gone.

Kafka clients connect to the addresses a broker advertises in Metadata, not to the bootstrap
address they were given: for client traffic to stay on the proxy the broker must advertise the
proxy's port (Broker(proxy=True) and BrokerProcess(proxy=True) do that). The target may be
set after the proxy is made (`proxy.target = (host, port)`); until then connections are closed.
"""
from __future__ import annotations

import socket
import threading
import time
from queue import Queue


class TcpProxy:
    def __init__(self, target: tuple[str, int] | None, host: str = "127.0.0.1"):
        self.target = target
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.broker = None                      # the broker it fronts, when a broker made it
        self.mode = "pass"                      # pass | blackhole | cut
        self.latency = 0.0                      # seconds added to every chunk forwarded
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    # -- faults ----------------------------------------------------------------------------

    def blackhole(self) -> None:
        self.mode = "blackhole"

    def cut(self) -> None:
        self.mode = "cut"
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            _close(a)
            _close(b)

    def delay(self, seconds: float) -> None:
        """A slow link: bytes still flow, in order, each chunk `seconds` late."""
        self.latency = seconds

    def heal(self) -> None:
        self.mode = "pass"
        self.latency = 0.0

    # -- plumbing --------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "cut" or self.target is None:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True,
                                 name="proxy-pump").start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        # The reader stamps each chunk with when it is due; a sender thread forwards it then,
        # so latency delays the bytes without limiting how many are on their way.
        queue: "Queue[tuple[float, bytes] | None]" = Queue()
        threading.Thread(target=self._send, args=(queue, src, dst), daemon=True,
                         name="proxy-send").start()
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.mode == "pass":
                    queue.put((time.monotonic() + self.latency, data))
                # blackhole: read and drop, so the sender's buffers never fill up either
        except OSError:
            pass
        finally:
            queue.put(None)

    def _send(self, queue: "Queue", src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                item = queue.get()
                if item is None:
                    break
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)

    def close(self) -> None:
        self._closed = True
        _close(self.listener)
        self.cut()

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    bootstrap_servers = address


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
