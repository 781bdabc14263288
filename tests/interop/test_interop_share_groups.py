"""Share groups (KIP-932) judged by confluent-kafka's ShareConsumer (librdkafka's, which speaks
ShareGroupHeartbeat / ShareFetch / ShareAcknowledge v1) against a real broker process: several
consumers on ONE partition split its records with none delivered twice, explicit RELEASE
redelivers with a higher delivery count and REJECT never does, a classic and a KIP-848 group
read the same topic beside them, and the records a kill -9'd consumer held go to the others."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.interop.targets import start_target, target_name
from tests.interop.test_interop_groups import new_topic

pytestmark = [pytest.mark.interop,
              pytest.mark.skipif(target_name() != "gregor",
                                 reason="share groups need ShareGroupHeartbeat (API 76)")]

# Liveness bounds only (never asserted as durations): generous beside the broker's own timers.
WAIT_S = 90


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("share") / "data")
    try:
        yield b
    finally:
        b.stop()


def share_consumer(broker, group, mode="implicit"):
    from confluent_kafka import ShareConsumer
    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                          "share.acknowledgement.mode": mode})


def produce(broker, topic, n, partition=0):
    """n records in batches of at most 50: records are acquired batch by batch, so one large
    batch would go to one consumer whole."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                  "batch.num.messages": 50})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=partition)
    assert p.flush(30) == 0


def drain(consumers, want, per_record_s=0.0, seen=None, explicit=None):
    """Poll round robin until `want` records were seen; {offset: [consumer index, ...]}."""
    seen = {} if seen is None else seen
    deadline = time.monotonic() + WAIT_S
    while sum(len(v) for v in seen.values()) < want and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for m in c.poll(0.1):
                if m.error():
                    continue
                seen.setdefault(m.offset(), []).append((i, m.delivery_count()))
                if per_record_s:
                    time.sleep(per_record_s)
                if explicit is not None:
                    explicit(c, m)
    return seen


def _wire(broker):
    from gregor.testing.wire import WireClient
    host, port = broker.bootstrap.rsplit(":", 1)
    return WireClient(int(port), host)


def ready(broker, group: str, topic: str, members: int) -> bool:
    """The group has `members` members and its share-partition of topic-0 has started (a
    member fetched): records written from now on are delivered (share.auto.offset.reset is
    latest, so records written before the start are not)."""
    with _wire(broker) as w:
        d = w.request("ShareGroupDescribe", 1, {"group_ids": [group],
                                                "include_authorized_operations": False})
        if len(d["groups"][0]["members"]) < members:
            return False
        o = w.request("DescribeShareGroupOffsets", 0, {"groups": [{"group_id": group,
                      "topics": [{"topic_name": topic, "partitions": [0]}]}]})
        parts = [p for t in o["groups"][0]["topics"] for p in t["partitions"]]
        return bool(parts) and parts[0]["start_offset"] >= 0


def start_offset(broker, group: str, topic: str) -> int:
    with _wire(broker) as w:
        o = w.request("DescribeShareGroupOffsets", 0, {"groups": [{"group_id": group,
                      "topics": [{"topic_name": topic, "partitions": [0]}]}]})
        return o["groups"][0]["topics"][0]["partitions"][0]["start_offset"]


def started(broker, consumers, group, topic, members=None, seen=None):
    """Subscribe and poll until the group is ready (see ready()); records polled meanwhile
    go into `seen` as drain() records them."""
    for c in consumers:
        c.subscribe([topic])
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for m in c.poll(0.2):
                if not m.error() and seen is not None:
                    seen.setdefault(m.offset(), []).append((i, m.delivery_count()))
        if ready(broker, group, topic, members or len(consumers)):
            return
    raise AssertionError("the share consumers never started on the partition")


def test_several_share_consumers_split_one_partition(broker):
    topic = new_topic(broker, 0, partitions=1)
    group = f"share-split-{topic}"
    consumers = [share_consumer(broker, group) for _ in range(3)]
    try:
        started(broker, consumers, group, topic)
        n = 1500
        produce(broker, topic, n)
        seen = drain(consumers, n, per_record_s=0.001)
        assert sorted(seen) == list(range(n))
        dups = {o: v for o, v in seen.items() if len(v) > 1}
        assert not dups, f"delivered twice while every lock was held: {list(dups.items())[:5]}"
        by_consumer = {v[0][0] for v in seen.values()}
        assert len(by_consumer) >= 2, "one consumer took the whole partition"
        assert all(v[0][1] == 1 for v in seen.values())        # first delivery each
    finally:
        for c in consumers:
            c.close()


def test_explicit_release_redelivers_and_reject_never_does(broker):
    from confluent_kafka import AcknowledgeType
    topic = new_topic(broker, 0, partitions=1)
    group = f"share-explicit-{topic}"
    c = share_consumer(broker, group, mode="explicit")
    try:
        started(broker, [c], group, topic)
        produce(broker, topic, 30)

        def decide(consumer, m):
            if m.delivery_count() == 1 and m.offset() % 3 == 1:
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
            elif m.offset() % 3 == 2:
                consumer.acknowledge(m, AcknowledgeType.REJECT)
            else:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        seen = drain([c], 40, explicit=decide)
        released = [o for o in range(30) if o % 3 == 1]
        assert sorted(seen) == list(range(30))
        for o in released:
            assert [d for _i, d in seen[o]] == [1, 2], (o, seen[o])
        for o in range(30):
            if o % 3 != 1:
                assert len(seen[o]) == 1, (o, seen[o])
        c.commit_sync(10)
        deadline = time.monotonic() + WAIT_S        # every record is finished at the broker
        while start_offset(broker, group, topic) != 30 and time.monotonic() < deadline:
            list(c.poll(0.2))
        assert start_offset(broker, group, topic) == 30
    finally:
        c.close()


def test_share_group_beside_classic_and_consumer_groups_on_one_topic(broker):
    from confluent_kafka import Consumer
    topic = new_topic(broker, 0, partitions=1)
    group = f"share-beside-{topic}"
    share = share_consumer(broker, group)
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"classic-{topic}",
                        "auto.offset.reset": "earliest"})
    kip848 = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"k848-{topic}",
                       "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        started(broker, [share], group, topic)
        n = 200
        produce(broker, topic, n)
        for c in (classic, kip848):
            c.subscribe([topic])
        got = {"classic": set(), "kip848": set()}
        seen: dict = {}
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and (len(seen) < n or any(len(v) < n
                                                                    for v in got.values())):
            for m in share.poll(0.1):
                if not m.error():
                    seen.setdefault(m.offset(), []).append((0, m.delivery_count()))
            for name, c in (("classic", classic), ("kip848", kip848)):
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got[name].add(m.offset())
        assert sorted(seen) == list(range(n))
        assert got["classic"] == got["kip848"] == set(range(n))
    finally:
        share.close()
        classic.close()
        kip848.close()


_HOLDER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    while True:
        msgs = [m for m in c.poll(0.5) if not m.error()]
        if msgs:
            print("HELD", len(msgs), flush=True)
            time.sleep(3600)          # holds its records, unacknowledged, until killed
""")


def test_records_of_a_killed_consumer_go_to_the_others(broker):
    topic = new_topic(broker, 0, partitions=1)
    group = f"share-kill-{topic}"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, broker.bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True)
    other = share_consumer(broker, group)
    try:
        deadline = time.monotonic() + WAIT_S
        while not ready(broker, group, topic, 1) and time.monotonic() < deadline:
            time.sleep(0.2)
        n = 50
        produce(broker, topic, n)
        line = holder.stdout.readline()
        assert line.startswith("HELD"), line
        held = int(line.split()[1])
        assert held > 0
        seen: dict = {}
        started(broker, [other], group, topic, members=2, seen=seen)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
        seen = drain([other], n, seen=seen)
        assert sorted(seen) == list(range(n))
        redelivered = [o for o, v in seen.items() if v[0][1] == 2]
        assert len(redelivered) == held     # the held ones came back, one delivery later
    finally:
        if holder.poll() is None:
            holder.kill()
        other.close()
