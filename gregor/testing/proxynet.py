"""The fallback where network namespaces cannot be made (not root): the cluster's links go
through gregor.testing's userspace proxies (proxy.py), and the nemesis's cuts map onto them.

    c = ProxyRunCluster(tmp, brokers=3, clients=4)     # same interface as NetnsCluster
    c.net.cut("n1", "zk")          # broker 1's ZooKeeper link blackholed (both ways)
    c.net.cut("n0", "n2")          # broker 2's replication listener blackholed for everyone

What it cannot do, said once when a cut is asked for: a proxy link carries both directions,
so one-way cuts become two-way; a broker's replication listener is one proxy for all its
peers, so cutting one pair cuts every broker from that one; clients reach brokers directly,
so client cuts are not made. A blackholed proxy drops the bytes it reads, so a healed
connection may carry a torn frame (the broker closes it; the client reconnects).
"""
from __future__ import annotations

import threading
import uuid
from pathlib import Path

from .cluster import ProxiedCluster
from .zookeeper import ZooKeeperServer


def links_for_cut(src: str, dst: str) -> tuple[str, int] | None:
    """Which proxy stands for the directed pair: ("zk", i) for broker i's ZooKeeper link,
    ("broker", j) for broker j's replication listener, None when no proxy is on that path."""
    def broker(node):
        return int(node[1:]) if node.startswith("n") and node[1:].isdigit() else None
    a, b = broker(src), broker(dst)
    if "zk" in (src, dst) and (a is not None or b is not None):
        return ("zk", a if a is not None else b)
    if a is not None and b is not None:
        return ("broker", b)
    return None


class ProxyNetwork:
    def __init__(self, cluster: ProxiedCluster, nodes: list[str], log=print):
        self.cluster = cluster
        self.nodes = nodes
        self.prefix = "proxies"
        self.log = log
        self._cuts: dict[tuple[str, str], tuple[str, int]] = {}
        self._lock = threading.Lock()
        self._warned = False
        self.started = True

    def _proxy(self, link: tuple[str, int]):
        kind, i = link
        return (self.cluster.zk_links if kind == "zk" else self.cluster.broker_links)[i]

    def cut(self, src: str, dst: str) -> None:
        link = links_for_cut(src, dst)
        if not self._warned:
            self._warned = True
            self.log("proxy fallback: cuts are two-way, per broker listener, and never "
                     "between clients and brokers")
        if link is None:
            return
        with self._lock:
            self._cuts[(src, dst)] = link
            self._proxy(link).blackhole()

    def cut_both(self, a: str, b: str) -> None:
        self.cut(a, b)
        self.cut(b, a)

    def isolate(self, node: str, from_nodes=None) -> None:
        for other in (from_nodes if from_nodes is not None else self.nodes):
            if other != node:
                self.cut_both(node, other)

    def heal(self, src: str | None = None, dst: str | None = None) -> None:
        with self._lock:
            for pair in [p for p in self._cuts
                         if (src is None or p[0] == src) and (dst is None or p[1] == dst)]:
                del self._cuts[pair]
            still = set(self._cuts.values())
            for kind, links in (("zk", self.cluster.zk_links),
                                ("broker", self.cluster.broker_links)):
                for i, proxy in enumerate(links):
                    if (kind, i) not in still:
                        proxy.heal()

    @property
    def cuts(self) -> set:
        with self._lock:
            return set(self._cuts)

    def thread(self, node: str, target, *args, name=None, daemon=True, **kwargs):
        return threading.Thread(target=target, args=args, kwargs=kwargs, name=name,
                                daemon=daemon)

    def call(self, node: str, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def close(self) -> None:
        self.started = False


class _ZooKeeperProcess:
    """The run's ZooKeeper as the nemesis drives it (pause, kill, start on the same port)."""

    def __init__(self, server: ZooKeeperServer):
        self.server = server
        self.paused = False

    @property
    def running(self) -> bool:
        return self.server.proc is not None and self.server.proc.poll() is None

    def pause(self) -> None:
        if self.running:
            self.server.proc.send_signal(19)
            self.paused = True

    def resume(self) -> None:
        if self.running:
            self.server.proc.send_signal(18)
        self.paused = False

    def kill(self) -> None:
        if self.running:
            self.server.proc.kill()
            self.server.proc.wait(10)
        self.paused = False

    def start(self, timeout: float = 60.0) -> None:
        from ..broker.cluster import zookeeper_server as zk
        cfg = zk.write_config(self.server.dir, self.server.port)
        import subprocess
        self.server.proc = subprocess.Popen(zk.command(cfg), stdout=subprocess.DEVNULL,
                                            stderr=subprocess.STDOUT, cwd=str(self.server.dir))
        zk.wait_ready("127.0.0.1", self.server.port, self.server.proc, timeout)


class ProxyRunCluster(ProxiedCluster):
    """ZooKeeper + brokers on loopback behind proxies, with NetnsCluster's interface."""

    def __init__(self, root, brokers: int = 3, clients: int = 4, *, session_ms: int = 3000,
                 settings: dict | None = None, log=print):
        self._server = ZooKeeperServer().start()
        self.zookeeper = _ZooKeeperProcess(self._server)
        super().__init__(Path(root), self._server.hosts, f"jepsen-{uuid.uuid4().hex[:8]}",
                         brokers, session_ms=session_ms, settings=settings)
        self.broker_ids = [b.broker_id for b in self.brokers]
        self.clients = [f"c{i}" for i in range(clients)]
        nodes = ["zk"] + [f"n{i}" for i in self.broker_ids] + self.clients + ["ctl"]
        self.net = ProxyNetwork(self, nodes, log)
        self.client_settings: dict = {}

    def start(self) -> "ProxyRunCluster":
        super().start()
        self.wait_for(lambda: len(self.registered()) == len(self.brokers)
                      and self.controller_id() != -1, what="registered brokers")
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self._server.stop()

    def node_of(self, broker_id: int) -> str:
        return f"n{broker_id}"

    def broker(self, broker_id: int):
        return self.by_id(broker_id)

    def run_in(self, node: str, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def healthy(self, topics: dict[str, int]) -> bool:
        if len(self.registered()) != len(self.brokers) or self.controller() == -1:
            return False
        return all(len(self.isr_of(t, p)) == len(self.brokers) and self.leader_of(t, p) >= 0
                   for t, n in topics.items() for p in range(n))

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict | None = None) -> str:
        from ..client.admin import AdminClient, NewTopic
        configs = {k: str(v) for k, v in (config or {}).items()}
        with AdminClient({"bootstrap.servers": self.bootstrap}) as admin:
            admin.create_topics([NewTopic(name, partitions, replication_factor, configs)],
                                timeout=60)
        for p in range(partitions):
            self.wait_for(lambda: len(self.isr_of(name, p)) == replication_factor,
                          what=f"{name}-{p} with a full ISR")
        return name
