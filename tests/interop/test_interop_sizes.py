"""Sizes at the edges: records close to message.max.bytes, and a topic with many partitions
(one Produce / Fetch carrying a hundred partitions)."""
from __future__ import annotations

import random
import time

import pytest

pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
pytest.importorskip("kafka", reason="kafka-python is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT_S = 120.0


def create(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=TIMEOUT_S)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_records_close_to_message_max_bytes(target, topic_name, codec):
    """Incompressible ~990 KB values: one record per batch, just under the broker's default
    message.max.bytes (1048588); both clients read them back with default fetch sizes."""
    create(target.bootstrap, topic_name, 1)
    rnd = random.Random(5)
    values = [rnd.randbytes(990_000) for _ in range(8)]
    p = Producer({"bootstrap.servers": target.bootstrap, "compression.type": codec})
    errors = []
    for i, v in enumerate(values):
        p.produce(topic_name, key=b"big-%d" % i, value=v, partition=0,
                  on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(TIMEOUT_S) == 0 and not errors, errors
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "big",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic_name, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < len(values) and time.monotonic() < deadline:
        for m in c.consume(10, 0.5):
            assert not m.error(), m.error()
            got.append((m.offset(), m.value()))
    c.close()
    assert got == list(enumerate(values))

    from kafka import KafkaConsumer, TopicPartition as KTP
    kc = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=None,
                       enable_auto_commit=False)
    kc.assign([KTP(topic_name, 0)])
    kc.seek_to_beginning()
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < len(values) and time.monotonic() < deadline:
        for recs in kc.poll(500).values():
            got += [(m.offset, m.value) for m in recs]
    kc.close()
    assert got == list(enumerate(values))


def test_hundred_partitions_in_one_topic(target, topic_name):
    partitions = 100
    create(target.bootstrap, topic_name, partitions)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
    kp = KafkaProducer(bootstrap_servers=target.bootstrap, linger_ms=20)
    futures = [(p, i, kp.send(topic_name, value=b"%d-%d" % (p, i), partition=p))
               for i in range(30) for p in range(partitions)]
    kp.flush(TIMEOUT_S)
    acked = {(md.partition, md.offset): v for p, i, f in futures
             for md, v in [(f.get(TIMEOUT_S), b"%d-%d" % (p, i))]}
    kp.close(timeout=10)
    assert sorted(acked) == [(p, i) for p in range(partitions) for i in range(30)]
    kc = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=None,
                       enable_auto_commit=False)
    kc.assign([KTP(topic_name, p) for p in range(partitions)])
    kc.seek_to_beginning()
    got = {}
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < len(acked) and time.monotonic() < deadline:
        for recs in kc.poll(500).values():
            for m in recs:
                assert (m.partition, m.offset) not in got, "a record came back twice"
                got[(m.partition, m.offset)] = m.value
    end = kc.end_offsets([KTP(topic_name, p) for p in range(partitions)])
    kc.close()
    assert got == acked
    assert {tp.partition: o for tp, o in end.items()} == {p: 30 for p in range(partitions)}
