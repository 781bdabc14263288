"""Transactions on a cluster: the coordinator of a transactional id is the leader of its
partition of the replicated `__transaction_state`, markers reach partitions led by other
brokers through WriteTxnMarkers, and a committed transaction stays committed when the
coordinator is killed (confluent-kafka on both sides)."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.broker.cluster.test_replication import create_topic, new_cluster, state
from tests.support.cluster import BrokerCluster
from tests.support.txn_indexes import assert_txn_indexes_match_logs

pytestmark = pytest.mark.timeout(240)


def txn_coordinator(c: BrokerCluster, tid: str) -> int:
    from gregor.broker.txn.coordinator import partition_for
    return state(c, "__transaction_state", partition_for(tid, 50))["leader"]


def read_committed(bootstrap: str, topic: str, partitions: int, expect: int,
                   timeout: float = 60) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, deadline = [], time.monotonic() + timeout
    idle_until = None
    while time.monotonic() < deadline:
        ms = c.consume(500, 0.5)
        out += [m.value() for m in ms if not m.error()]
        if len(out) >= expect:
            # keep reading a little: anything beyond `expect` is a failure too
            idle_until = idle_until or time.monotonic() + 1.0
            if time.monotonic() > idle_until:
                break
    c.close()
    return out


def test_transactions_span_partitions_led_by_every_broker(zookeeper_server, tmp_path):
    from confluent_kafka import Producer
    c = new_cluster(zookeeper_server, tmp_path)
    try:
        create_topic(c, "tx", 3, 3, min_insync_replicas=2)
        assert len({state(c, "tx", p)["leader"] for p in range(3)}) == 3   # spread
        tid = "tx-cluster"
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid,
                      "transaction.timeout.ms": 20000})
        p.init_transactions(60)
        assert txn_coordinator(c, tid) in (0, 1, 2)
        p.begin_transaction()
        for i in range(30):
            p.produce("tx", b"c%d" % i, partition=i % 3)
        p.commit_transaction(60)
        p.begin_transaction()
        for i in range(30):
            p.produce("tx", b"a%d" % i, partition=i % 3)
        assert p.flush(60) == 0      # on every replica's log before the abort, not purged
        p.abort_transaction(60)
        got = read_committed(c.bootstrap, "tx", 3, 30)
        assert sorted(got) == sorted(b"c%d" % i for i in range(30))
        # the coordinator dies after a commit: the outcome stands, a new coordinator takes
        # over the id (its producer re-inits and goes on)
        p.begin_transaction()
        for i in range(30):
            p.produce("tx", b"d%d" % i, partition=i % 3)
        p.commit_transaction(60)
        coord = txn_coordinator(c, tid)
        c.by_id(coord).kill()
        c.wait_for(lambda: txn_coordinator(c, tid) not in (coord, -1),
                   what="a new transaction coordinator")
        p2 = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid})
        p2.init_transactions(60)
        p2.begin_transaction()
        for i in range(30):
            p2.produce("tx", b"e%d" % i, partition=i % 3)
        p2.commit_transaction(60)
        got = read_committed(c.bootstrap, "tx", 3, 90)
        want = [b"%s%d" % (k, i) for k in (b"c", b"d", b"e") for i in range(30)]
        assert sorted(got) == sorted(want)
    finally:
        c.stop()
    # every replica, the killed coordinator's too: one aborted transaction on 3 partitions
    assert_txn_indexes_match_logs([b.data_dir for b in c.brokers], aborts_at_least=9)


def test_offsets_sent_to_a_transaction_commit_with_it(zookeeper_server, tmp_path):
    """consume-transform-produce: the group's offsets (on the group coordinator, maybe
    another broker) become visible only when the transaction commits."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    c = new_cluster(zookeeper_server, tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    try:
        create_topic(c, "src", 1, 3)
        create_topic(c, "dst", 1, 3)
        src = Producer({"bootstrap.servers": c.bootstrap})
        for i in range(10):
            src.produce("src", b"%d" % i)
        assert src.flush(30) == 0
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "ctp",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
        cons.subscribe(["src"])
        msgs, deadline = [], time.monotonic() + 60
        while len(msgs) < 10 and time.monotonic() < deadline:
            m = cons.poll(0.2)
            if m is not None and not m.error():
                msgs.append(m)
        assert len(msgs) == 10
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "ctp-tx"})
        p.init_transactions(60)
        p.begin_transaction()
        for m in msgs:
            p.produce("dst", m.value() + b"!")
        p.send_offsets_to_transaction([TopicPartition("src", 0, 10)],
                                      cons.consumer_group_metadata(), 60)
        p.commit_transaction(60)
        committed = cons.committed([TopicPartition("src", 0)], timeout=30)
        assert committed[0].offset == 10
        cons.close()
        assert sorted(read_committed(c.bootstrap, "dst", 1, 10)) == \
            sorted(b"%d!" % i for i in range(10))
    finally:
        c.stop()
    assert_txn_indexes_match_logs([b.data_dir for b in c.brokers])
