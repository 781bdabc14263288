"""A private ZooKeeper for the tests: one server per pytest session, one chroot per test.

    def test_x(zk_connect):            # "127.0.0.1:PORT/t-<hex>", a fresh empty chroot
        BrokerProcess(..., settings={"zookeeper.connect": zk_connect})

Started from Debian's jar (gregor/broker/cluster/zookeeper_server.py) in a temp directory, so
nothing in /etc or /var is touched. Missing java or ZooKeeper skips the tests with the reason
on a developer machine, but fails them when CI=true: CI must never go green by skipping.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from gregor.broker.cluster import zookeeper_server as zk


class ZooKeeperServer:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="gregor-zk-"))
        self.proc = None
        self.port = 0
        self.log_path = self.dir / "zookeeper.log"

    def start(self) -> "ZooKeeperServer":
        self.proc, self.port = zk.start(self.dir, stdout=open(self.log_path, "w"))
        return self

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def unavailable(why: str):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"ZooKeeper is required in CI: {why}", pytrace=False)
    pytest.skip(f"ZooKeeper tests need ZooKeeper: {why}")


@pytest.fixture(scope="session")
def zookeeper_server():
    why = zk.missing_reason()
    if why:
        unavailable(why)
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper_server) -> str:
    """zookeeper.connect for this test: the session's server, a chroot of its own."""
    return f"{zookeeper_server.hosts}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def three_brokers(zookeeper_server, tmp_path_factory):
    """Three broker processes on a chroot of their own, shared by one test module's tests
    (nothing in them kills a broker; a longer session keeps a loaded machine from expiring
    one)."""
    from tests.support.cluster import BrokerCluster
    chroot = f"{zookeeper_server.hosts}/m-{uuid.uuid4().hex[:12]}"
    c = BrokerCluster(tmp_path_factory.mktemp("cluster"), chroot, size=3, session_ms=6000)
    c.start()
    c.wait_for(lambda: len(c.registered()) == 3 and c.controller_id() != -1,
               what="3 registered brokers and a controller")
    try:
        yield c
    finally:
        c.stop()
