"""gregor's ShareConsumer against the broker: members of one share group split a partition,
implicit and explicit acknowledgement, RELEASE redelivers, close gives back what is held, and
it shares a partition with confluent-kafka's ShareConsumer (librdkafka's) in one group."""
import time

import pytest

from gregor.client.consumer.share import ACCEPT, REJECT, RELEASE, ShareConsumer
from gregor.testing import Broker

WAIT_S = 60          # liveness bound only


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


def topic(broker, name):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def produce(broker, name, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "batch.num.messages": 20})
    for i in range(n):
        p.produce(name, value=b"%d" % i, partition=0)
    assert p.flush(30) == 0


def ready(broker, group, consumers):
    """Poll until the group's share-partition has started (records from now on arrive)."""
    svc = broker.broker.share
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for c in consumers:
            assert c.poll(0.1) == []
        if any(k[0] == group for k in svc.partitions):
            return
    raise AssertionError("never started")


def drain(consumers, want, on_record=None):
    seen = {}
    deadline = time.monotonic() + WAIT_S
    while sum(len(v) for v in seen.values()) < want and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for r in c.poll(0.1):
                seen.setdefault(r.offset, []).append((i, r.delivery_count))
                if on_record:
                    on_record(c, r)
    return seen


def test_two_members_split_a_partition_implicitly(broker):
    name = topic(broker, "sc-split")
    cs = [ShareConsumer("sc-split", broker.bootstrap_servers, max_poll_records=20)
          for _ in range(2)]
    try:
        for c in cs:
            c.subscribe([name])
        ready(broker, "sc-split", cs)
        produce(broker, name, 200)
        seen = drain(cs, 200)
        assert sorted(seen) == list(range(200))
        assert all(len(v) == 1 for v in seen.values())
        assert {v[0][0] for v in seen.values()} == {0, 1}
    finally:
        for c in cs:
            c.close()
    sp = [v for k, v in broker.broker.share.partitions.items() if k[0] == "sc-split"][0]
    assert sp.start_offset == 200          # close accepted the last poll's records


def test_explicit_release_and_reject(broker):
    name = topic(broker, "sc-explicit")
    c = ShareConsumer("sc-explicit", broker.bootstrap_servers, acknowledgement_mode="explicit")
    try:
        c.subscribe([name])
        ready(broker, "sc-explicit", [c])
        produce(broker, name, 10)

        def decide(consumer, r):
            if r.offset == 3 and r.delivery_count == 1:
                consumer.acknowledge(r, RELEASE)
            elif r.offset == 4:
                consumer.acknowledge(r, REJECT)
            else:
                consumer.acknowledge(r, ACCEPT)
        seen = drain([c], 11, decide)
        assert [d for _i, d in seen[3]] == [1, 2] and len(seen[4]) == 1
        with pytest.raises(RuntimeError):
            c.acknowledge_offset(name, 0, 3, ACCEPT)       # already acknowledged
        assert all(v is None for v in c.commit_sync().values())
    finally:
        c.close()


def test_explicit_mode_refuses_a_poll_with_records_unacknowledged(broker):
    name = topic(broker, "sc-strict")
    c = ShareConsumer("sc-strict", broker.bootstrap_servers, acknowledgement_mode="explicit")
    try:
        c.subscribe([name])
        ready(broker, "sc-strict", [c])
        produce(broker, name, 3)
        got = []
        deadline = time.monotonic() + WAIT_S
        while not got and time.monotonic() < deadline:
            got = c.poll(0.2)
        assert got
        with pytest.raises(RuntimeError):
            c.poll(0.1)
    finally:
        c._delivered = []
        c.close()


def test_shares_a_partition_with_confluent_kafkas_share_consumer(broker):
    from confluent_kafka import ShareConsumer as CkShareConsumer
    name = topic(broker, "sc-mixed")
    ours = ShareConsumer("sc-mixed", broker.bootstrap_servers, max_poll_records=20)
    theirs = CkShareConsumer({"bootstrap.servers": broker.bootstrap_servers,
                              "group.id": "sc-mixed"})
    try:
        ours.subscribe([name])
        theirs.subscribe([name])
        ready(broker, "sc-mixed", [ours])
        produce(broker, name, 300)
        seen = {}
        deadline = time.monotonic() + WAIT_S
        while len(seen) < 300 and time.monotonic() < deadline:
            for r in ours.poll(0.1):
                seen.setdefault(r.offset, []).append("gregor")
                time.sleep(0.002)
            for m in theirs.poll(0.1):
                if not m.error():
                    seen.setdefault(m.offset(), []).append("librdkafka")
                    time.sleep(0.002)
        assert sorted(seen) == list(range(300))
        assert all(len(v) == 1 for v in seen.values())
        assert {v[0] for v in seen.values()} == {"gregor", "librdkafka"}
    finally:
        ours.close()
        theirs.close()
