"""A share group's membership survives a group coordinator move: three brokers on ZooKeeper,
two members (spoken by hand over the wire) in a share group, kill -9 of the broker leading
the group's `__consumer_offsets` partition. The new leader loads the group's records: the
members heartbeat there with the epoch they had (no UNKNOWN_MEMBER_ID, no rejoin), and
ShareGroupDescribe shows the same group epoch, members and member epochs."""
from __future__ import annotations

import time

import pytest

from gregor.broker.txn.coordinator import partition_for
from gregor.testing.wire import WireClient
from tests.broker.cluster.test_replication import create_topic, new_cluster, state
from tests.broker.share.wire_share import Member

pytestmark = pytest.mark.timeout(300)
WAIT_S = 120             # liveness bounds only
PARTITIONS = 3
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


class _At:
    """What Member needs of a broker: an address."""

    def __init__(self, host: str, port: int):
        self.bootstrap_servers = f"{host}:{port}"


def find_coordinator(c, group: str, not_node: int | None = None) -> tuple[int, str, int]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for b in c.brokers:
            if not b.running:
                continue
            try:
                with WireClient(b.port, b.host) as w:
                    r = w.request("FindCoordinator", 4, {"key_type": 0,
                                                         "coordinator_keys": [group]})
            except OSError:
                continue
            k = r["coordinators"][0]
            if k["error_code"] == 0 and k["node_id"] != not_node:
                return k["node_id"], k["host"], k["port"]
        time.sleep(0.2)
    raise AssertionError(f"no coordinator for {group}")


def heartbeat_until_served(member: Member) -> dict:
    deadline = time.monotonic() + WAIT_S
    while True:
        r = member.heartbeat()
        if r["error_code"] not in RETRIABLE or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


def describe(member: Member, group: str) -> dict:
    return member.client.request("ShareGroupDescribe", 1, {
        "group_ids": [group], "include_authorized_operations": False})["groups"][0]


def test_members_keep_their_epochs_when_the_group_coordinator_moves(zookeeper_server,
                                                                      tmp_path):
    c = new_cluster(zookeeper_server, tmp_path, **{"offsets.topic.num.partitions": PARTITIONS})
    try:
        create_topic(c, "jobs", 2, 3)
        group = "sg-membership"
        node, host, port = find_coordinator(c, group)
        p = partition_for(group, PARTITIONS)
        c.wait_for(lambda: len(state(c, "__consumer_offsets", p)["isr"]) == 3, WAIT_S,
                   what="__consumer_offsets fully replicated")
        m1, m2 = Member(_At(host, port), group, ["jobs"]), Member(_At(host, port), group,
                                                                  ["jobs"])
        assert heartbeat_until_served(m1)["error_code"] == 0
        assert m2.heartbeat()["error_code"] == 0
        assert m1.heartbeat()["error_code"] == 0
        assert m1.epoch == m2.epoch == 2
        before = describe(m1, group)
        assert before["group_epoch"] == 2
        c.by_id(node).kill()                                   # kill -9 of the coordinator
        c.wait_for(lambda: state(c, "__consumer_offsets", p)["leader"] not in (-1, node),
                   WAIT_S, what="a new leader of the group's __consumer_offsets partition")
        new_node, host, port = find_coordinator(c, group, not_node=node)
        for m in (m1, m2):
            m.client = WireClient(port, host)
            r = heartbeat_until_served(m)
            assert r["error_code"] == 0, r                     # not UNKNOWN_MEMBER_ID (25)
            assert r["member_epoch"] == 2
        after = describe(m1, group)
        assert after["error_code"] == 0 and after["group_epoch"] == 2
        key = lambda g: sorted((x["member_id"], x["member_epoch"],        # noqa: E731
                                str(x["assignment"])) for x in g["members"])
        assert key(after) == key(before)
        print(f"coordinator moved from broker {node} to {new_node}")
    finally:
        c.stop()
