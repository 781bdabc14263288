"""ZooKeeper, brokers and clients each in a network namespace of its own (netns.py), so
any directed pair can be cut with real TCP behaviour.

    with NetnsCluster(tmp, brokers=3, clients=4) as c:
        c.create_topic("q", partitions=2, replication_factor=3, config={...})
        c.net.cut(c.node_of(c.leader_of("q", 0)), "zk")    # a zombie leader
        c.run_in(c.clients[0], work)     # work() runs on a thread in client c0's namespace

Nodes: "zk", "n<id>" per broker, "c<i>" per client, and "ctl", where the harness itself
reads ZooKeeper and creates topics (the nemesis never cuts it). Brokers listen on (and so
advertise) their namespace's address. Processes are started with `ip netns exec`; threads of
this process enter a namespace with setns (Linux keeps the network namespace per thread, and
threads a thread starts inherit it), so client libraries' own threads follow.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from .netns import Network
from .process import BrokerProcess
from .zk_view import ZooKeeperView

SESSION_MS = 3000
CONTROL = "ctl"


def broker_node(broker_id: int) -> str:
    return f"n{broker_id}"


class NetnsBroker(BrokerProcess):
    """A BrokerProcess started inside its node's namespace, listening on that address, on
    a port picked free inside the namespace once and kept across restarts."""

    def __init__(self, net: Network, node: str, data_dir: Path, *, protocol: str = "PLAINTEXT",
                 **kwargs):
        super().__init__(data_dir, **kwargs)
        self.net = net
        self.node = node
        self.host = net.address(node)
        from ..broker.cluster.zookeeper_server import free_port
        self.port = net.call(node, free_port, self.host)
        if protocol != "PLAINTEXT":
            where = f"{protocol}://{self.host}:{self.port}"
            self.settings["listeners"] = where
            self.settings["advertised.listeners"] = where

    def command(self) -> list[str]:
        cmd = super().command()
        i = cmd.index("--listen")
        cmd[i + 1] = f"{self.net.address(self.node)}:{self.port}"
        return self.net.exec_prefix(self.node) + cmd

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.net.address(self.node)}:{self.port}"

    bootstrap = bootstrap_servers


class NetnsZooKeeper:
    """A standalone ZooKeeper in the "zk" namespace (Debian's jar, a private directory)."""

    def __init__(self, net: Network, directory: Path, node: str = "zk"):
        self.net = net
        self.node = node
        self.dir = Path(directory)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.paused = False

    @property
    def host(self) -> str:
        return self.net.address(self.node)

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 60.0) -> "NetnsZooKeeper":
        from ..broker.cluster import zookeeper_server as zk
        if not self.port:
            self.port = self.net.call(self.node, zk.free_port, self.host)
        cfg = zk.write_config(self.dir, self.port, address=self.host)
        log = open(self.dir / "zookeeper.log", "a")
        self.proc = self.net.popen(self.node, zk.command(cfg), stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=str(self.dir))
        log.close()
        self.paused = False
        self.net.call(CONTROL, zk.wait_ready, self.host, self.port, self.proc, timeout)
        return self

    def kill(self) -> None:
        if self.running:
            self.proc.kill()
            self.proc.wait(10)
        self.paused = False

    def pause(self) -> None:
        if self.running:
            self.proc.send_signal(19)      # SIGSTOP
            self.paused = True

    def resume(self) -> None:
        if self.running:
            self.proc.send_signal(18)      # SIGCONT
        self.paused = False

    def stop(self) -> None:
        if self.running:
            self.resume()
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class NetnsCluster(ZooKeeperView):
    def __init__(self, root: str | Path | None = None, brokers: int = 3, clients: int = 4, *,
                 session_ms: int = SESSION_MS, settings: dict | None = None,
                 network: Network | None = None, secure: bool = False):
        """secure: the cluster `gregor cluster --secure` runs (SASL_SSL with SCRAM everywhere,
        the ACL authorizer, ZooKeeper ACLs), its certificate naming the namespace addresses;
        `client_settings` are the admin user's librdkafka settings."""
        self._tmp = None
        if root is None:
            self._tmp = tempfile.mkdtemp(prefix="gregor-netns-")
            root = self._tmp
        self.root = Path(root)
        self.session_ms = session_ms
        self.broker_ids = list(range(brokers))
        self.clients = [f"c{i}" for i in range(clients)]
        nodes = ["zk"] + [broker_node(i) for i in self.broker_ids] + self.clients + [CONTROL]
        self.net = network or Network(nodes)
        self.settings = dict(settings or {})
        self.zookeeper = NetnsZooKeeper(self.net, self.root / "zookeeper")
        self.brokers: list[NetnsBroker] = []
        self.zk: KazooClient | None = None
        self.chroot = "/gregor"
        self.secure = secure
        self.files = None
        self.client_settings: dict = {}

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "NetnsCluster":
        try:
            if not self.net.started:
                self.net.start()
            self.zookeeper.start()
            connect = f"{self.zookeeper.hosts}{self.chroot}"
            base = {"zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": self.session_ms}
            protocol = "PLAINTEXT"
            if self.secure:
                protocol = "SASL_SSL"
                base.update(self._secure_setup(connect))
            base.update(self.settings)
            self.settings = base
            self.brokers = [NetnsBroker(self.net, broker_node(i), self.root / f"broker-{i}",
                                        broker_id=i, settings=dict(base), protocol=protocol)
                            for i in self.broker_ids]
            if self.secure:
                self.client_settings = self.files.confluent_settings(self.bootstrap)
                self.client_settings.pop("bootstrap.servers")
            for b in self.brokers:
                b.start(60)
            self.zk = self.net.call(CONTROL, self._connect_zk, connect)
            self.wait_for(lambda: len(self.registered()) == len(self.brokers)
                          and self.controller() != -1,
                          what=f"{len(self.brokers)} registered brokers and a controller")
        except BaseException:
            self.stop()
            raise
        return self

    def _connect_zk(self, connect: str) -> KazooClient:
        if self.secure:       # reading secured znodes takes the brokers' ZooKeeper login
            from ..broker.cluster.zk_security import zk_security
            from ..broker.config import BrokerConfig
            zk = zk_security(BrokerConfig(self.files.zk_settings())).client(connect)
        else:
            zk = KazooClient(hosts=connect)
        zk.start(30)
        return zk

    def _secure_setup(self, connect: str) -> dict:
        """The secured cluster's files, a broker certificate naming every broker's namespace
        address, the SCRAM users in ZooKeeper; returns the brokers' security settings."""
        from ..cli.cluster_security import SecureClusterFiles, create_users
        from .netcert import reissue_broker_certificate
        self.files = SecureClusterFiles.create_or_load(self.root / "secure")
        reissue_broker_certificate(self.files, [self.net.address(broker_node(i))
                                                for i in self.broker_ids])
        self.net.call(CONTROL, create_users, self.files, connect)
        settings = self.files.broker_settings()
        settings.pop("listeners")
        settings.pop("advertised.listeners")
        return settings

    def stop(self) -> None:
        try:
            for b in self.brokers:
                if b.running:
                    b.kill()
            if self.zk is not None:
                try:
                    self.zk.stop()
                    self.zk.close()
                except Exception:
                    pass
                self.zk = None
            self.zookeeper.stop()
        finally:
            self.net.close()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None

    def __enter__(self) -> "NetnsCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- where things are ------------------------------------------------------------------

    def broker(self, broker_id: int) -> NetnsBroker:
        return self.brokers[self.broker_ids.index(broker_id)]

    def node_of(self, broker_id: int) -> str:
        return broker_node(broker_id)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.port)

    bootstrap_servers = bootstrap

    def run_in(self, node: str, fn, *args, **kwargs):
        return self.net.call(node, fn, *args, **kwargs)

    def wait_for(self, predicate, timeout: float | None = None, what: str = "condition"):
        """Poll until predicate() is truthy; the default is generous: many sessions long."""
        timeout = timeout or max(60.0, 20 * self.session_ms / 1000.0)
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.1)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict | None = None) -> str:
        """Create through the controller (from the control node); wait for full ISRs."""
        def create():
            from ..client.admin import AdminClient, NewTopic
            configs = {k: str(v) for k, v in (config or {}).items()}
            with AdminClient({"bootstrap.servers": self.bootstrap,
                              **self.client_settings}) as admin:
                admin.create_topics([NewTopic(name, partitions, replication_factor, configs)],
                                    timeout=60)
        self.run_in(CONTROL, create)
        for p in range(partitions):
            self.wait_for(lambda: len(self.isr_of(name, p)) == replication_factor
                          and self.leader_of(name, p) >= 0,
                          what=f"{name}-{p} with a full ISR")
        return name

    def healthy(self, topics: dict[str, int]) -> bool:
        """Every broker registered, a controller, every partition led with a full ISR."""
        if len(self.registered()) != len(self.brokers) or self.controller() == -1:
            return False
        return all(len(self.isr_of(t, p)) == len(self.brokers) and self.leader_of(t, p) >= 0
                   for t, n in topics.items() for p in range(n))
