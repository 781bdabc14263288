"""ACLs on a three-broker cluster (ZooKeeper mode): the first ACLs created offline in
ZooKeeper before any broker runs (the inter-broker principal's CLUSTER_ACTION: over PLAINTEXT
every broker is User:ANONYMOUS), a change made through one broker applied by every broker
within a second, and still in force after the controller is killed (kill -9) and comes back."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from gregor.client.admin import AdminClient
from gregor.client.admin_acls import acl_binding, acl_filter
from tests.support.broker import REPO_ROOT
from tests.support.cluster import BrokerCluster
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(180)
AUTHZ = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
         "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
DENIED, OK = 29, 0


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    connect = f"{zookeeper_server.hosts}/acl-{uuid.uuid4().hex[:12]}"
    proc = subprocess.run(
        [sys.executable, "-m", "gregor", "acls", "add", "--allow-principal", "User:ANONYMOUS",
         "--operation", "ClusterAction", "--operation", "Alter", "--operation", "Create",
         "--cluster", "--zookeeper", connect], capture_output=True, text=True, cwd=REPO_ROOT,
        timeout=60)
    assert proc.returncode == 0, proc.stderr
    c = BrokerCluster(tmp_path_factory.mktemp("acl-cluster"), connect, size=3,
                      session_ms=6000, settings=AUTHZ)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def describe_code(port: int, topic: str) -> int:
    with WireClient(port) as w:
        r = w.request("Metadata", 8, {"topics": [{"name": topic}],
                                      "allow_auto_topic_creation": False})
    return r["topics"][0]["error_code"]


def wait_all(c: BrokerCluster, topic: str, code: int) -> None:
    """Until every running broker answers `code` for the topic."""
    c.wait_for(lambda: all(describe_code(b.port, topic) == code for b in c.brokers
                           if b.running), timeout=20, what=f"every broker to answer {code}")


def test_a_change_through_one_broker_reaches_every_broker(cluster):
    c = cluster
    topic = "acl-" + uuid.uuid4().hex[:6]
    first = AdminClient({"bootstrap.servers": c.brokers[0].bootstrap})
    last = AdminClient({"bootstrap.servers": c.brokers[2].bootstrap})
    try:
        first.create_topics([topic])
        assert all(describe_code(b.port, topic) == DENIED for b in c.brokers)
        first.create_acls([acl_binding("topic", "acl-", "prefixed", "User:ANONYMOUS", "*",
                                       "describe", "allow")])
        wait_all(c, topic, OK)
        last.delete_acls([acl_filter("topic", "acl-", "prefixed")])
        wait_all(c, topic, DENIED)
        with AdminClient({"bootstrap.servers": c.brokers[1].bootstrap}) as middle:
            got = middle.describe_acls()
        assert {x.pattern.resource_type.name for x in got} == {"CLUSTER"}
    finally:
        first.close()
        last.close()


def test_acls_hold_after_the_controller_is_killed_and_returns(cluster):
    c = cluster
    topic = "acl-" + uuid.uuid4().hex[:6]
    with AdminClient({"bootstrap.servers": c.bootstrap}) as a:
        a.create_topics([topic])
        a.create_acls([acl_binding("topic", topic, "literal", "User:ANONYMOUS", "*", "read",
                                   "allow")])
    wait_all(c, topic, OK)
    victim = c.by_id(c.controller_id())
    victim.kill()
    c.wait_for(lambda: c.controller_id() not in (-1, victim.broker_id), what="a new controller")
    victim.start()
    c.wait_for(lambda: describe_code(victim.port, topic) == OK,
               what="the restarted broker to apply the ACLs it finds in ZooKeeper")
    with AdminClient({"bootstrap.servers": victim.bootstrap}) as a:
        a.delete_acls([acl_filter("topic", topic)])
    wait_all(c, topic, DENIED)
