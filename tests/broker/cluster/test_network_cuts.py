"""Network cuts between brokers: each broker has a client listener and a REPLICATION listener
(inter.broker.listener.name) advertised through a userspace TCP proxy
(tests/support/cluster.py's ProxiedCluster), so a test can cut the brokers off from a leader
while clients and ZooKeeper still reach it.

What Kafka's ZooKeeper mode does, and gregor must: the leader keeps leading (its ZooKeeper
session is fine), its followers fall out of the ISR after replica.lag.time.max.ms, acks=all
writes are refused with NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas (the
producer retries), and once the link heals the followers catch up, rejoin the ISR and the
writes go on. Nothing acknowledged is lost or duplicated and the replicas end identical."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.broker.cluster.test_replication import (create_topic, finish, leader_of,
                                                   replica_records, run_load, state)
from tests.support.checker import ReplicationChecker
from tests.support.cluster import ProxiedCluster

pytestmark = pytest.mark.timeout(240)
LAG_MS = 4000


def metadata_ports(bootstrap: str) -> dict[int, int]:
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {b.id: b.port for b in md.brokers.values()}


@pytest.mark.parametrize("fault", ["blackhole", "cut"])
def test_followers_cut_off_from_the_leader(zookeeper_server, tmp_path, fault):
    c = ProxiedCluster(tmp_path, zookeeper_server.hosts, f"n-{uuid.uuid4().hex[:12]}",
                       settings={"replica.lag.time.max.ms": LAG_MS,
                                 "replica.socket.timeout.ms": 5000})
    proxies = c.broker_links
    try:
        c.start()
        c.wait_for(lambda: len(c.registered()) == 3 and c.controller_id() != -1,
                   what="3 registered brokers and a controller")
        # Metadata answers on the listener asked: clients see the client ports, a request
        # through the replication listener sees the replication (proxy) addresses.
        # (each broker's view of ZooKeeper may lag the registrations a moment)
        c.wait_for(lambda: metadata_ports(c.bootstrap) ==
                   {b.broker_id: b.port for b in c.brokers}, what="client listener Metadata")
        c.wait_for(lambda: metadata_ports(f"127.0.0.1:{proxies[0].port}") ==
                   {i: p.port for i, p in enumerate(proxies)},
                   what="replication listener Metadata")
        create_topic(c, "cut", 1, 3, min_insync_replicas=2)
        checker = ReplicationChecker()
        prod, stop, t = run_load(c, "cut", checker)
        c.wait_for(lambda: len(checker.acked) >= 2000, what="2000 acknowledged records")
        leader = leader_of(c, "cut", 0)
        getattr(proxies[leader], fault)()
        try:
            c.wait_for(lambda: state(c, "cut", 0)["isr"] == [leader], timeout=60,
                       what="the ISR shrunk to the leader")
            # the leader's ZooKeeper session is fine: no election
            assert leader_of(c, "cut", 0) == leader
            # Below min.insync.replicas nothing more is acknowledged: writes that waited
            # for the ISR fail with NOT_ENOUGH_REPLICAS_AFTER_APPEND, new ones with
            # NOT_ENOUGH_REPLICAS, and the producer retries. (A second for the delivery
            # callbacks of what was acknowledged before the shrink to run.)
            time.sleep(1)
            at = len(checker.acked)
            time.sleep(2 * LAG_MS / 1000)
            assert len(checker.acked) == at, "acks=all acknowledged below min.insync.replicas"
        finally:
            proxies[leader].heal()
        c.wait_for(lambda: sorted(state(c, "cut", 0)["isr"]) == [0, 1, 2], timeout=90,
                   what="the followers back in the ISR")
        at = len(checker.acked)
        c.wait_for(lambda: len(checker.acked) >= at + 2000, timeout=90,
                   what="2000 more acknowledged records after the heal")
        assert leader_of(c, "cut", 0) == leader
        finish(c, "cut", 1, checker, prod, stop, t)
    finally:
        c.stop()
    logs = [replica_records(b.data_dir, "cut", 0) for b in c.brokers]
    assert logs[0] == logs[1] == logs[2]


def test_a_slow_link_to_the_leader_keeps_the_isr(zookeeper_server, tmp_path):
    """The followers' link to the leader delayed by 150 ms each way (well under the lag
    time): acks=all goes on, slower, the ISR is never touched, nothing is lost."""
    c = ProxiedCluster(tmp_path, zookeeper_server.hosts, f"d-{uuid.uuid4().hex[:12]}",
                       settings={"replica.lag.time.max.ms": LAG_MS})
    try:
        c.start()
        c.wait_for(lambda: len(c.registered()) == 3 and c.controller_id() != -1,
                   what="3 registered brokers and a controller")
        create_topic(c, "slow", 1, 3, min_insync_replicas=2)
        path = "/brokers/topics/slow/partitions/0/state"
        version = c.zk.get(path)[1].version
        checker = ReplicationChecker()
        prod, stop, t = run_load(c, "slow", checker)
        c.wait_for(lambda: len(checker.acked) >= 1000, what="1000 acknowledged records")
        leader = leader_of(c, "slow", 0)
        c.broker_links[leader].delay(0.15)
        try:
            at = len(checker.acked)
            c.wait_for(lambda: len(checker.acked) >= at + 1000, timeout=60,
                       what="1000 acknowledged records over the slow link")
            time.sleep(2 * LAG_MS / 1000)
        finally:
            c.broker_links[leader].heal()
        finish(c, "slow", 1, checker, prod, stop, t)
        assert c.zk.get(path)[1].version == version          # no ISR change at all
    finally:
        c.stop()
    logs = [replica_records(b.data_dir, "slow", 0) for b in c.brokers]
    assert logs[0] == logs[1] == logs[2]
