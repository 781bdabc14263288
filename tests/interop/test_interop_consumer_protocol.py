"""KIP-848 consumer groups (`group.protocol=consumer`) with confluent-kafka (librdkafka) against
a real broker process: the broker assigns (uniform, range), members share the partitions
disjointly, every record is consumed once while the group is stable, the group rebalances when
a member closes or dies, a restarted group resumes at its committed offsets, the group and its
members survive kill -9 of the broker, and admin clients list and describe it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from confluent_kafka import TopicPartition

from tests.interop.targets import start_target, target_name
from tests.interop.test_interop_groups import (PARTITIONS, exactly_once, new_topic, poll_until,
                                               rewind, wait_assigned)

pytestmark = [pytest.mark.interop,
              pytest.mark.skipif(target_name() != "gregor",
                                 reason="KIP-848 needs ConsumerGroupHeartbeat (API 68)")]

SESSION_MS = 4000        # group.consumer.session.timeout.ms: short, so a killed member goes soon
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": str(SESSION_MS),
            "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("kip848") / "data", settings=SETTINGS)
    try:
        yield b
    finally:
        b.stop()


def consumer(broker, group, **extra):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **extra})


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_share_partitions_and_rebalance_when_one_closes(broker, assignor):
    n = 400
    topic = new_topic(broker, n)
    group = f"kip848-{assignor}-{topic}"
    c1 = consumer(broker, group, **{"group.remote.assignor": assignor})
    c2 = consumer(broker, group, **{"group.remote.assignor": assignor})
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])
        sets = wait_assigned([c1, c2])
        assert sorted(len(s) for s in sets) == [2, 2]
        if assignor == "range":
            assert sorted(sorted(s) for s in sets) == [[0, 1], [2, 3]]
        rewind([c1, c2])
        seen = poll_until([c1, c2], n)
        exactly_once(seen, n)
        c1.commit(asynchronous=False)
        c2.commit(asynchronous=False)
        c1.close()                              # leaves (epoch -1): c2 takes everything
        c1 = None
        assert wait_assigned([c2]) == [set(range(PARTITIONS))]
        committed = c2.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                 timeout=10)
        assert sum(tp.offset for tp in committed) == n
    finally:
        if c1 is not None:
            c1.close()
        c2.close()


def test_restarted_group_resumes_at_committed_offsets(broker):
    topic = new_topic(broker, 200)
    group = f"kip848-resume-{topic}"
    c = consumer(broker, group)
    c.subscribe([topic])
    seen = poll_until([c], 120)
    nxt: dict = {}
    for (p, o) in seen:
        nxt[p] = max(nxt.get(p, 0), o + 1)
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in nxt.items()], asynchronous=False)
    c.close()
    c = consumer(broker, group)
    c.subscribe([topic])
    rest = poll_until([c], 200 - sum(nxt.values()))
    c.close()
    for (p, o) in rest:
        assert o >= nxt.get(p, 0), f"re-read {p}:{o} below the committed {nxt.get(p)}"
    exactly_once({**seen, **rest}, 200)


def test_killed_member_is_expired_and_its_partitions_reassigned(broker, tmp_path):
    topic = new_topic(broker, 0)
    group = f"kip848-kill-{topic}"
    script = tmp_path / "member.py"
    script.write_text(textwrap.dedent(f"""
        from confluent_kafka import Consumer
        c = Consumer({{"bootstrap.servers": "{broker.bootstrap}", "group.id": "{group}",
                       "group.protocol": "consumer"}})
        c.subscribe(["{topic}"])
        while True:
            c.poll(0.1)
            if c.assignment():
                print("assigned", flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    lines: list = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    c2 = consumer(broker, group)
    try:
        c2.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                lines and 0 < len(c2.assignment()) < PARTITIONS):
            c2.poll(0.1)
        assert 0 < len(c2.assignment()) < PARTITIONS
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed_at = time.monotonic()
        assert wait_assigned([c2], timeout=30) == [set(range(PARTITIONS))]
        # not before its session ran out (the broker had no other way to know)
        assert time.monotonic() - killed_at >= SESSION_MS / 1000 - 1.0
    finally:
        if proc.poll() is None:
            proc.kill()
        c2.close()


def test_admin_clients_list_and_describe_a_consumer_protocol_group(broker):
    import kafka
    from confluent_kafka import ConsumerGroupTopicPartitions, ConsumerGroupType
    from confluent_kafka.admin import AdminClient
    topic = new_topic(broker, 10)
    group = f"kip848-adm-{topic}"
    c = consumer(broker, group, **{"client.id": "kip848-member"})
    try:
        c.subscribe([topic])
        wait_assigned([c])
        c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        a = AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = {g.group_id: g for g in a.list_consumer_groups().result(30).valid}
        assert str(listed[group].state).endswith("STABLE")
        assert listed[group].type == ConsumerGroupType.CONSUMER
        only = a.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30).valid
        assert group in {g.group_id for g in only}
        d = a.describe_consumer_groups([group])[group].result(30)
        assert str(d.state).endswith("STABLE") and d.partition_assignor == "uniform"
        assert d.type == ConsumerGroupType.CONSUMER
        [m] = d.members
        assert m.client_id == "kip848-member"
        assert sorted(tp.partition for tp in m.assignment.topic_partitions) == \
            list(range(PARTITIONS))
        offsets = a.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)])[group].result(30)
        assert {tp.partition: tp.offset for tp in offsets.topic_partitions
                if tp.offset >= 0} == {0: 3}
        # kafka-python's admin (classic APIs only): listed with its type, described as Kafka 4
        # describes a group of the other protocol through DescribeGroups (Dead, no members)
        ka = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable",
                    "group_type": "consumer"} in ka.list_groups()
            kd = ka.describe_groups([group])[group]
            assert kd["group_state"] == "Dead" and kd["members"] == []
        finally:
            ka.close()
        # gregor's admin (and `gregor groups describe`) asks ConsumerGroupDescribe first
        from gregor.client.admin import AdminClient as GregorAdmin
        ga = GregorAdmin({"bootstrap.servers": broker.bootstrap})
        try:
            gd = ga.describe_groups([group])[group]
            assert (gd.state, gd.protocol_type, gd.protocol) == ("Stable", "consumer", "uniform")
            [gm] = gd.members
            assert gm.client_id == "kip848-member"
            assert gm.assignment == [(topic, p) for p in range(PARTITIONS)]
        finally:
            ga.close()
    finally:
        c.close()


def test_group_and_members_survive_kill_9_of_the_broker(tmp_path):
    from tests.support.broker import BrokerProcess
    b = BrokerProcess(tmp_path / "data", settings={**SETTINGS,
                                                   "group.consumer.session.timeout.ms": "30000"})
    b.start()
    try:
        n = 300
        topic = new_topic(b, n)
        group = f"kip848-crash-{topic}"
        c1, c2 = consumer(b, group), consumer(b, group)
        c1.subscribe([topic])
        c2.subscribe([topic])
        before = wait_assigned([c1, c2])
        rewind([c1, c2])
        seen = poll_until([c1, c2], n // 2)
        c1.commit(asynchronous=False)
        c2.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in c1.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)}
        start = {p: max(o, 0) for p, o in committed.items()}    # -1001: nothing committed
        b.kill()
        b.start()
        # the members heartbeat on with their epochs: no rebalance, same partitions
        everything = poll_until([c1, c2], n, seen=dict(seen), timeout=60)
        assert [{tp.partition for tp in c.assignment()} for c in (c1, c2)] == before
        exactly_once(everything, n)
        assert {tp.partition: tp.offset for tp in c1.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)} == committed
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        d = admin.describe_consumer_groups([group])[group].result(30)
        assert len(d.members) == 2
        # nobody joined again: the reloaded members went on (the log names each join)
        joins = [line for line in b.log_text().splitlines()
                 if f"group {group}: member" in line and "joins" in line]
        assert len(joins) == 2, joins
        c1.close()
        c2.close()
        # a new member after another kill -9 starts at the committed offsets
        b.kill()
        b.start()
        c3 = consumer(b, group)
        c3.subscribe([topic])
        try:
            got = poll_until([c3], n - sum(start.values()), timeout=60)
            assert {(p, o) for p, o in got} == {
                (p, o) for p in range(PARTITIONS) for o in range(start[p], n // PARTITIONS)}
        finally:
            c3.close()
    finally:
        b.stop()


def test_regex_subscription_is_resolved_by_the_broker(broker):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    stamp = int(time.time() * 1000) % 100000
    prefix = f"rx{stamp}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for name in (f"{prefix}-a", f"{prefix}-b", f"other{stamp}"):
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for name in (f"{prefix}-a", f"{prefix}-b", f"other{stamp}"):
        for i in range(10):
            p.produce(name, value=b"%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    c = consumer(broker, f"kip848-rx-{stamp}")
    try:
        c.subscribe([f"^{prefix}-.*"])        # librdkafka sends it as SubscribedTopicRegex
        topics: dict = {}
        deadline = time.monotonic() + 30
        while sum(topics.values()) < 20 and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                topics[m.topic()] = topics.get(m.topic(), 0) + 1
        assert topics == {f"{prefix}-a": 10, f"{prefix}-b": 10}
        assert {tp.topic for tp in c.assignment()} == {f"{prefix}-a", f"{prefix}-b"}
    finally:
        c.close()


def test_static_member_restarts_into_its_partitions_without_a_rebalance(broker):
    topic = new_topic(broker, 0)
    group = f"kip848-static-{topic}"
    s1 = consumer(broker, group, **{"group.instance.id": "i1"})
    s2 = consumer(broker, group, **{"group.instance.id": "i2"})
    try:
        s1.subscribe([topic])
        s2.subscribe([topic])
        before = wait_assigned([s1, s2])
        s1.close()              # a static member leaves with epoch -2: its partitions wait
        s1 = consumer(broker, group, **{"group.instance.id": "i1"})
        s1.subscribe([topic])
        assert wait_assigned([s1, s2]) == before
        epochs = [line for line in broker.log_text().splitlines()
                  if f"group {group}: group epoch" in line]
        assert len(epochs) == 2, epochs         # two joins; the restart bumped nothing
    finally:
        s1.close()
        s2.close()


def test_partitions_added_to_a_topic_are_assigned_at_the_next_heartbeats(broker):
    from confluent_kafka.admin import AdminClient, NewPartitions
    topic = new_topic(broker, 0, partitions=2)
    group = f"kip848-grow-{topic}"
    c1, c2 = consumer(broker, group), consumer(broker, group)
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])
        assert sorted(len(s) for s in wait_assigned([c1, c2], partitions=2)) == [1, 1]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions(topic, 6)])[topic].result(30)
        sets = wait_assigned([c1, c2], partitions=6, timeout=30)
        assert sorted(len(s) for s in sets) == [3, 3]
    finally:
        c1.close()
        c2.close()
