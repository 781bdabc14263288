"""Clusters of gregor broker processes on ZooKeeper, as gregor's cluster mode runs them.

    with Cluster(brokers=3) as c:                 # a private ZooKeeper plus 3 brokers
        c.create_topic("orders", partitions=2, replication_factor=3)
        c.kill_broker(c.leader_of("orders", 0))   # kill -9: the controller elects a new leader
        c.wait_for_isr("orders", 0, size=2)
        c.broker(1).faults.push("Produce", ["NOT_ENOUGH_REPLICAS"])   # faults per broker

`Cluster` owns its ZooKeeper (Debian's package; without it ZooKeeperMissing says what to
install) unless given one. `BrokerCluster` is the lower level it builds on: N brokers on a
ZooKeeper chroot you give it; `ProxiedCluster` routes each broker's ZooKeeper link and
replication listener through TcpProxy so tests can cut them.

Sessions are short (zookeeper.session.timeout.ms=3000 by default) so a killed broker's
registration disappears within a few seconds, yet a broker starved of CPU on a busy machine
does not lose its session; waits derive from that, never fixed sleeps.
"""
from __future__ import annotations

import shutil
import socket
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from .process import BrokerProcess
from .proxy import TcpProxy
from .zk_view import ZooKeeperView
from .zookeeper import ZooKeeperServer

SESSION_MS = 3000


class BrokerCluster(ZooKeeperView):
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

    def controller_epoch(self) -> int:
        return int(self.zk.get("/controller_epoch")[0])

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
    """A BrokerCluster whose links go through userspace TCP proxies (proxy.py),
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


class Cluster(BrokerCluster):
    def __init__(self, brokers: int = 3, config: dict | None = None, *,
                 data_dir: str | Path | None = None, zookeeper: ZooKeeperServer | None = None,
                 session_ms: int = SESSION_MS):
        """brokers: how many (ids 0..N-1). config: settings of every broker, by Kafka's
        names. zookeeper: a running ZooKeeperServer to use (each Cluster takes a chroot of
        its own), else one is started and stopped with the cluster."""
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        from .inprocess import check_settings
        config = check_settings(config)          # a typo fails here, not in N processes
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="gregor-cluster-")
            data_dir = self._tmp
        self._own_zk = zookeeper is None
        self.zookeeper = zookeeper or ZooKeeperServer()
        if self._own_zk:
            self.zookeeper.start()
        elif self.zookeeper.proc is None:
            raise ValueError("the ZooKeeperServer given is not running; start() it first")
        try:
            super().__init__(Path(data_dir), self.zookeeper.chroot("cluster"), brokers,
                             session_ms=session_ms, settings=config)
        except BaseException:
            self._cleanup()
            raise

    def start(self, timeout: float | None = None) -> "Cluster":
        """Start every broker and wait until all are registered and one is the controller."""
        try:
            super().start()
            self.wait_for(lambda: len(self.registered()) == len(self.brokers)
                          and self.controller_id() != -1, timeout,
                          what=f"{len(self.brokers)} registered brokers and a controller")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self._cleanup()

    close = stop

    def _cleanup(self) -> None:
        if self._own_zk:
            self.zookeeper.stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap

    # -- brokers ---------------------------------------------------------------------------

    def broker(self, broker_id: int) -> BrokerProcess:
        """Broker `broker_id` (a BrokerProcess: faults, hold, intercept, requests...)."""
        try:
            return self.by_id(broker_id)
        except StopIteration:
            raise ValueError(f"no broker {broker_id}; this cluster has "
                             f"{sorted(b.broker_id for b in self.brokers)}") from None

    def stop_broker(self, broker_id: int) -> int:
        """Graceful stop (SIGTERM: its leaderships move first); returns its exit code."""
        return self.broker(broker_id).stop()

    def kill_broker(self, broker_id: int) -> int:
        """kill -9: no goodbye; ZooKeeper notices when its session expires."""
        return self.broker(broker_id).kill()

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP: it hangs; past its session the cluster moves on without it."""
        self.broker(broker_id).pause()

    def resume_broker(self, broker_id: int) -> None:
        self.broker(broker_id).resume()

    def start_broker(self, broker_id: int, timeout: float = 30.0) -> BrokerProcess:
        """Start a stopped or killed broker again on its data and port."""
        b = self.broker(broker_id)
        b.start(timeout)
        self.wait_for(lambda: broker_id in self.registered(), what=f"broker {broker_id} "
                      "registered again")
        return b

    # -- state -----------------------------------------------------------------------------

    def wait_for_isr(self, topic: str, partition: int, size: int,
                     timeout: float | None = None) -> list[int]:
        """Until the partition has a leader and exactly `size` in-sync replicas."""
        def ready():
            isr = self.isr_of(topic, partition)
            return isr if len(isr) == size and self.leader_of(topic, partition) >= 0 else None
        return self.wait_for(ready, timeout, what=f"{topic}-{partition} with {size} in-sync "
                             "replicas")

    def wait_for_leader(self, topic: str, partition: int, *, other_than: int | None = None,
                        timeout: float | None = None) -> int:
        """Until the partition has a leader (other than `other_than`); returns it."""
        found: list[int] = []

        def elected():
            lead = self.leader_of(topic, partition)
            if lead >= 0 and lead != other_than:
                found.append(lead)
                return True
            return False
        self.wait_for(elected, timeout, what=f"a leader of {topic}-{partition}")
        return found[-1]

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     config: dict | None = None, timeout: float = 60.0) -> str:
        """Create a topic through the controller and wait until every partition has a leader
        and a full ISR. replication_factor defaults to min(3, brokers)."""
        from ..client.admin import AdminClient, NewTopic
        rf = replication_factor or min(3, len(self.brokers))
        configs = {k: str(v) for k, v in (config or {}).items()}
        deadline = time.monotonic() + timeout
        with AdminClient({"bootstrap.servers": self.bootstrap}) as admin:
            while True:
                try:
                    admin.create_topics([NewTopic(name, partitions, rf, configs)],
                                        timeout=timeout)
                    break
                except Exception as e:
                    # the controller may not see every registered broker yet: retry as
                    # Kafka's clients do
                    if "REPLICATION_FACTOR" not in str(e).upper().replace(" ", "_") \
                            or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        for p in range(partitions):
            self.wait_for_isr(name, p, rf, max(1.0, deadline - time.monotonic()))
        return name
