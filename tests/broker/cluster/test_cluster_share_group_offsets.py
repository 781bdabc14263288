"""Share-group offset admin on a cluster: AlterShareGroupOffsets, DeleteShareGroupOffsets,
DescribeShareGroupOffsets and DeleteGroups answered by the group's coordinator while the
share-partition's state lives with its share coordinator on another broker (and the
partition's leader, which holds the in-flight window, on a third when the ids allow it).

Judged by confluent-kafka's ShareConsumer (explicit acknowledgement): after a reset to an
offset it is handed exactly the records from there on; after a delete it starts where
share.auto.offset.reset (latest) says, not where the deleted state was. confluent-kafka 2.16
and kafka-python have no share-group admin APIs, so the admin side is gregor's admin client
and `gregor share-groups describe`. The group must be empty for alter and delete
(NON_EMPTY_GROUP while a member is in it).
"""
from __future__ import annotations

import time
import uuid

import pytest
from click.testing import CliRunner

from gregor.cli.share_groups import command as share_groups_cli
from gregor.client.admin import AdminClient
from gregor.client import admin_share_groups as A
from gregor.protocol.errors import ErrorCode as E, KafkaError
from gregor.testing.wire import WireClient
from tests.broker.cluster.test_cluster_share_groups import (
    WAIT_S, produce, producer, share_consumer, start_state_topic)
from tests.broker.cluster.test_replication import create_topic, new_cluster, state

pytestmark = pytest.mark.timeout(300)
SETTINGS = {"share.coordinator.state.topic.num.partitions": 3,
            "offsets.topic.num.partitions": 3,
            "group.share.min.session.timeout.ms": 45000}


def pick_group(c, topic: str) -> tuple[str, int, int, int]:
    """(group, group coordinator, share coordinator of topic-0, leader of topic-0) with the
    share coordinator not the group coordinator, all three apart when possible."""
    from gregor.broker.cluster.znodes import topic_id_bytes
    from gregor.broker.share.state_records import partition_for as share_partition
    from gregor.broker.txn.coordinator import partition_for
    tid = topic_id_bytes(c.json(f"/brokers/topics/{topic}")["topic_id"])
    leader = state(c, topic, 0)["leader"]
    fallback = None
    for _ in range(300):
        group = f"sg-{uuid.uuid4().hex[:8]}"
        g = state(c, "__consumer_offsets", partition_for(group, 3))["leader"]
        s = state(c, "__share_group_state", share_partition(group, tid, 0, 3))["leader"]
        if -1 in (g, s) or g == s:
            continue
        if leader not in (g, s):
            return group, g, s, leader
        fallback = fallback or (group, g, s, leader)
    assert fallback, "no group id whose share coordinator is not its group coordinator"
    return fallback


def consume(c, group, want: int, ack) -> list:
    """Poll until `want` records came; ack(message) -> AcknowledgeType. Closes the consumer."""
    cons = share_consumer(c, group)
    got = []
    try:
        cons.subscribe(["jobs"])
        deadline = time.monotonic() + WAIT_S
        while len(got) < want and time.monotonic() < deadline:
            batch = [m for m in cons.poll(0.5) if not m.error()]
            for m in batch:
                cons.acknowledge(m, ack(m))
            if batch:
                assert all(e is None for e in (cons.commit_sync(30) or {}).values())
            got += batch
    finally:
        cons.close()
    return got


def wait_empty(c, admin, group) -> None:
    c.wait_for(lambda: not A.describe_share_group(admin, group).members, WAIT_S,
               what="the share group to have no members")


def code_of(fn) -> int:
    try:
        fn()
    except KafkaError as e:
        return e.code
    return E.NONE


def test_offsets_admin_through_the_share_coordinator(zookeeper_server, tmp_path):
    from confluent_kafka import AcknowledgeType
    c = new_cluster(zookeeper_server, tmp_path, **SETTINGS)
    try:
        create_topic(c, "jobs", 1, 3, min_insync_replicas=2)
        create_topic(c, "warm", 1, 3)
        start_state_topic(c)
        c.wait_for(lambda: all(state(c, "__consumer_offsets", k)["leader"] >= 0
                               for k in range(3)), WAIT_S, what="__consumer_offsets leaders")
        group, gc, sc, leader = pick_group(c, "jobs")
        print(f"group {group}: group coordinator {gc}, share coordinator {sc}, leader {leader}")
        # members join on the group's coordinator only: another broker says NOT_COORDINATOR
        other = next(b for b in c.brokers if b.broker_id != gc)
        with WireClient(other.port) as w:
            hb = w.request("ShareGroupHeartbeat", 1, {
                "group_id": group, "member_id": uuid.uuid4().hex[:22], "member_epoch": 0,
                "rack_id": None, "subscribed_topic_names": ["jobs"]})
        assert hb["error_code"] == E.NOT_COORDINATOR, hb
        prod = producer(c.bootstrap)
        produce(prod, "jobs", [b"r%d" % i for i in range(10)])
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        try:
            # a reset before any member: the state starts at 3 on the share coordinator
            A.alter_share_group_offsets(admin, group, {("jobs", 0): 3})
            assert A.share_group_offsets(admin, group) == {("jobs", 0): 3}
            got = consume(c, group, 7, lambda m: AcknowledgeType.ACCEPT)
            assert [m.value() for m in got] == [b"r%d" % i for i in range(3, 10)]
            assert A.share_group_offsets(admin, group) == {("jobs", 0): 10}

            # a member in the group: alter / delete offsets / delete group refused
            cons = share_consumer(c, group)
            cons.subscribe(["jobs"])
            c.wait_for(lambda: (cons.poll(0.2), A.describe_share_group(admin, group).members)[1],
                       WAIT_S, what="a member in the group")
            assert code_of(lambda: A.alter_share_group_offsets(
                admin, group, {("jobs", 0): 0})) == E.NON_EMPTY_GROUP
            assert code_of(lambda: A.delete_share_group_offsets(
                admin, group, ["jobs"])) == E.NON_EMPTY_GROUP
            assert code_of(lambda: A.delete_share_group(admin, group)) == E.NON_EMPTY_GROUP
            cons.close()
            wait_empty(c, admin, group)

            # a reset back to 5: the leader, holding start 10, serves the new state
            A.alter_share_group_offsets(admin, group, {("jobs", 0): 5})
            out = CliRunner().invoke(share_groups_cli, ["describe", group,
                                                        "--bootstrap-server", c.bootstrap])
            assert out.exit_code == 0, out.output
            assert "jobs\t0\t5\t10\t5" in out.output, out.output
            # accept r5-r7, release r8 and r9 (they stay in the state, available)
            got = consume(c, group, 5, lambda m: AcknowledgeType.ACCEPT
                          if m.value() < b"r8" else AcknowledgeType.RELEASE)
            assert [m.value() for m in got][:5] == [b"r%d" % i for i in range(5, 10)]
            wait_empty(c, admin, group)
            assert A.share_group_offsets(admin, group) == {("jobs", 0): 8}

            # delete the offsets: the next member starts at the log end (latest), so the
            # released r8 and r9 of the deleted state are not delivered again
            A.delete_share_group_offsets(admin, group, ["jobs"])
            assert A.share_group_offsets(admin, group) == {}
            cons = share_consumer(c, group)
            cons.subscribe(["jobs"])
            seen, n = [], 0
            deadline = time.monotonic() + WAIT_S
            while not seen and time.monotonic() < deadline:
                produce(prod, "jobs", [b"s%d" % n])
                n += 1
                for m in cons.poll(0.5):
                    if not m.error():
                        seen.append(m.value())
                        cons.acknowledge(m, AcknowledgeType.ACCEPT)
            assert seen and all(v.startswith(b"s") for v in seen), seen
            assert all(e is None for e in (cons.commit_sync(30) or {}).values())
            cons.close()
            wait_empty(c, admin, group)
            assert A.share_group_offsets(admin, group)[("jobs", 0)] > 10

            # delete the group: its state goes too
            A.delete_share_group(admin, group)
            assert code_of(lambda: A.share_group_offsets(admin, group)) == \
                E.GROUP_ID_NOT_FOUND
        finally:
            admin.close()
    finally:
        c.stop()
