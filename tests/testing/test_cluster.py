"""gregor.testing.Cluster: ZooKeeper plus broker processes; kill the leader, a new one takes
over; faults reach each broker."""
from __future__ import annotations

import pytest

from gregor.testing import Cluster, ReplicationChecker
from gregor.testing.zookeeper import missing_reason


@pytest.fixture(scope="module")
def zookeeper():
    from gregor.testing import ZooKeeperServer
    from tests.support.zookeeper import unavailable
    why = missing_reason()
    if why:
        unavailable(why)
    with ZooKeeperServer() as zk:
        yield zk


def test_failover_with_faults_on_one_broker(zookeeper):
    from confluent_kafka import Consumer, Producer, TopicPartition
    with Cluster(brokers=3, zookeeper=zookeeper) as c:
        assert c.controller() in (0, 1, 2)
        c.create_topic("failover", partitions=1, replication_factor=3,
                       config={"min.insync.replicas": 2})
        leader = c.leader_of("failover", 0)
        fault = c.broker(leader).faults.push("Produce", ["NOT_ENOUGH_REPLICAS"],
                                             topic="failover", partition=0)
        checker = ReplicationChecker()
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5})

        def send(seq):
            value = f"k:{seq}".encode()
            checker.sent_record(value)
            p.produce("failover", value, key=b"k", partition=0, on_delivery=lambda err, m, v=value:
                      err is None and checker.acknowledged(v, m.partition(), m.offset()))
        for seq in range(50):
            send(seq)
        assert p.flush(30) == 0
        assert fault.fired == 1
        c.kill_broker(leader)
        new_leader = c.wait_for_leader("failover", 0, other_than=leader)
        assert new_leader != leader
        for seq in range(50, 100):
            send(seq)
        assert p.flush(60) == 0
        c.start_broker(leader)
        c.wait_for_isr("failover", 0, 3)
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "check",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("failover", 0, 0)])
        while len(checker.read_at) < 100:
            m = consumer.poll(10)
            assert m is not None, checker.summary()
            if not m.error():
                checker.consumed(m.partition(), m.offset(), m.key(), m.value())
        consumer.close()
        assert len(checker.acked) == 100
        assert checker.problems() == [], checker.summary()
    with pytest.raises(ValueError, match="no broker 7"):
        c.broker(7)
