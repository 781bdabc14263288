"""A private ZooKeeper for the tests: one server per pytest session, one chroot per test.

    def test_x(zk_connect):            # "127.0.0.1:PORT/t-<hex>", a fresh empty chroot
        BrokerProcess(..., settings={"zookeeper.connect": zk_connect})

The server is gregor.testing's ZooKeeperServer (Debian's jar, in a temp directory). Missing java
or ZooKeeper skips the tests with the reason on a developer machine, but fails them when
CI=true: CI must never go green by skipping.
"""
from __future__ import annotations

import uuid

import pytest

from gregor.testing.plugin import zookeeper_unavailable as unavailable
from gregor.testing.zookeeper import ZooKeeperServer, missing_reason

__all__ = ["ZooKeeperServer", "unavailable", "zookeeper_server", "zk_connect", "three_brokers"]


@pytest.fixture(scope="session")
def zookeeper_server():
    why = missing_reason()
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
    from gregor.testing.cluster import BrokerCluster
    chroot = f"{zookeeper_server.hosts}/m-{uuid.uuid4().hex[:12]}"
    c = BrokerCluster(tmp_path_factory.mktemp("cluster"), chroot, size=3, session_ms=6000)
    c.start()
    c.wait_for(lambda: len(c.registered()) == 3 and c.controller_id() != -1,
               what="3 registered brokers and a controller")
    try:
        yield c
    finally:
        c.stop()
