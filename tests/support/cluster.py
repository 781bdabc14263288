"""Several `gregor broker` processes sharing one ZooKeeper chroot, for cluster tests.

    with BrokerCluster(tmp_path, zk_connect, size=3) as c:
        c.zk.get("/controller"); c.brokers[0].kill(); c.wait_for(lambda: ...)

Sessions are short (zookeeper.session.timeout.ms=3000 by default, the notes' 2-3 s) so a
killed broker's registration disappears within a few seconds, yet a broker starved of CPU on
a busy machine does not lose its session; waits derive from that, never fixed sleeps.
"""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from kazoo.client import KazooClient

from .broker import BrokerProcess
from .proxy import TcpProxy

SESSION_MS = 3000


class BrokerCluster:
    def __init__(self, root: Path, zk_connect: str, size: int = 3, *,
                 session_ms: int = SESSION_MS, settings: dict | None = None):
        self.root = Path(root)
        self.connect = zk_connect
        self.session_ms = session_ms
        base = {"zookeeper.connect": zk_connect, "zookeeper.session.timeout.ms": session_ms}
        base.update(settings or {})
        self.settings = base
        self.brokers = [self.new_broker(i) for i in range(size)]
        hosts, _, chroot = zk_connect.partition("/")
        self.zk = KazooClient(hosts=hosts + "/" + chroot)

    def new_broker(self, broker_id: int, data_dir: Path | None = None) -> BrokerProcess:
        return BrokerProcess(data_dir or self.root / f"broker-{broker_id}", broker_id=broker_id,
                             settings=dict(self.settings))

    def start(self) -> "BrokerCluster":
        for b in self.brokers:
            b.start()
        self.zk.start(10)
        return self

    def stop(self) -> None:
        for b in self.brokers:
            if b.running:
                b.stop()
        self.zk.stop()
        self.zk.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.running)

    # -- reading ZooKeeper -----------------------------------------------------------------

    def json(self, path: str):
        data, _ = self.zk.get(path)
        return json.loads(data) if data else None

    def controller_id(self) -> int:
        if self.zk.exists("/controller") is None:
            return -1
        try:
            return self.json("/controller")["brokerid"]
        except Exception:
            return -1

    def controller_epoch(self) -> int:
        return int(self.zk.get("/controller_epoch")[0])

    def registered(self) -> list[int]:
        return sorted(int(i) for i in self.zk.get_children("/brokers/ids"))

    def by_id(self, broker_id: int) -> BrokerProcess:
        return next(b for b in self.brokers if b.broker_id == broker_id)

    def wait_for(self, predicate, timeout: float | None = None, what: str = "condition"):
        """Poll until predicate() is truthy; the default timeout is a few session timeouts."""
        timeout = timeout or max(30.0, 10 * self.session_ms / 1000.0)
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.05)

    def __enter__(self) -> "BrokerCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ProxiedCluster(BrokerCluster):
    """A BrokerCluster whose links go through userspace TCP proxies (tests/support/proxy.py),
    so tests can cut them: `zk_links[i]` is broker i's ZooKeeper connection,
    `broker_links[i]` broker i's REPLICATION listener (inter.broker.listener.name), which the
    other brokers use to fetch from it and send it transaction markers. Clients reach every
    broker directly on its PLAINTEXT listener."""

    def __init__(self, root: Path, zk_hosts: str, chroot: str, size: int = 3, *,
                 session_ms: int = SESSION_MS, settings: dict | None = None):
        base = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
                "inter.broker.listener.name": "REPLICATION"}
        base.update(settings or {})
        super().__init__(root, f"{zk_hosts}/{chroot}", size, session_ms=session_ms,
                         settings=base)
        host, port = zk_hosts.split(":")
        self.zk_links = [TcpProxy((host, int(port))) for _ in self.brokers]
        self.broker_links = []
        for b, zk_link in zip(self.brokers, self.zk_links):
            port = _free_port()
            link = TcpProxy(("127.0.0.1", port))
            self.broker_links.append(link)
            b.settings["zookeeper.connect"] = f"127.0.0.1:{zk_link.port}/{chroot}"
            b.settings["listeners"] = f"PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:{port}"
            b.settings["advertised.listeners"] = \
                f"PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:{link.port}"

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            for link in self.zk_links + self.broker_links:
                link.close()


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]
