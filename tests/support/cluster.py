"""Several `gregor broker` processes sharing one ZooKeeper chroot, for cluster tests.

    with BrokerCluster(tmp_path, zk_connect, size=3) as c:
        c.zk.get("/controller"); c.brokers[0].kill(); c.wait_for(lambda: ...)

Sessions are short (zookeeper.session.timeout.ms=3000 by default, the notes' 2-3 s) so a
killed broker's registration disappears within a few seconds, yet a broker starved of CPU on
a busy machine does not lose its session; waits derive from that, never fixed sleeps.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from kazoo.client import KazooClient

from .broker import BrokerProcess

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
