"""Many clients at once, and consumers that keep reading through a broker restart."""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.broker import BrokerProcess  # noqa: E402

pytestmark = pytest.mark.interop

PRODUCERS = 8
CONSUMERS = 4
PER_PRODUCER = 3_000
PARTITIONS = 4
WAIT_S = 120.0


def create(bootstrap, topic, partitions=PARTITIONS):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=60)


class Tail(threading.Thread):
    """An assigned consumer that reads every partition from offset 0 until told to stop and
    has reached the given end offsets."""

    def __init__(self, bootstrap, topic, name):
        super().__init__(daemon=True, name=name)
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": name,
                           "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                           "reconnect.backoff.max.ms": 200})
        self.c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.seen: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        self.errors: list[str] = []
        self.ends: dict[int, int] | None = None
        self.deadline = time.monotonic() + WAIT_S * 2

    def done(self) -> bool:
        return self.ends is not None and all(
            (self.seen[p][-1][0] + 1 if self.seen[p] else 0) >= end for p, end in self.ends.items())

    def run(self):
        try:
            while not self.done() and time.monotonic() < self.deadline:
                for m in self.c.consume(500, 0.2):
                    if m.error():
                        if m.error().code() not in (KafkaError._PARTITION_EOF,
                                                    KafkaError._TRANSPORT,
                                                    KafkaError._ALL_BROKERS_DOWN):
                            self.errors.append(str(m.error()))
                        continue
                    self.seen[m.partition()].append((m.offset(), m.value()))
        finally:
            self.c.close()


def produce_all(bootstrap, topic, ident, acks_out, errors_out):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2,
                  "reconnect.backoff.max.ms": 200})

    def cb(err, msg):
        if err is None:
            acks_out.append((msg.partition(), msg.offset(), msg.value()))
        else:
            errors_out.append(str(err))
    for i in range(PER_PRODUCER):
        while True:
            try:
                p.produce(topic, key=b"%d-%d" % (ident, i), value=b"p%d-%06d" % (ident, i),
                          on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
        if i % 100 == 0:
            p.poll(0)
            time.sleep(0.005)  # spread the load over the test instead of one burst
    left = p.flush(WAIT_S)
    if left:
        errors_out.append(f"{left} records unacknowledged")


def run_clients(b, topic, during=None):
    tails = [Tail(b.bootstrap, topic, f"tail-{i}") for i in range(CONSUMERS)]
    for t in tails:
        t.start()
    acks, errors = [], []
    producers = [threading.Thread(target=produce_all, args=(b.bootstrap, topic, i, acks, errors),
                                  daemon=True) for i in range(PRODUCERS)]
    for t in producers:
        t.start()
    if during is not None:
        during(acks)
    for t in producers:
        t.join(WAIT_S)
    assert not any(t.is_alive() for t in producers), "a producer hung"
    assert not errors, f"producer errors: {errors[:5]}"
    assert len(acks) == PRODUCERS * PER_PRODUCER
    ends = defaultdict(int)
    for p, off, _ in acks:
        ends[p] = max(ends[p], off + 1)
    for t in tails:
        t.ends = {p: ends[p] for p in range(PARTITIONS)}
    for t in tails:
        t.join(WAIT_S)
    acked = {(p, off): v for p, off, v in acks}
    assert len(acked) == len(acks), "two acknowledgements for the same offset"
    for t in tails:
        assert not t.is_alive(), f"{t.name} did not reach the end offsets {t.ends}"
        assert not t.errors, f"{t.name}: {t.errors[:5]}"
        for p in range(PARTITIONS):
            offsets = [o for o, _ in t.seen[p]]
            assert offsets == list(range(ends[p])), (
                f"{t.name} partition {p}: offsets not exactly 0..{ends[p] - 1} "
                f"(read {len(offsets)}, duplicates or gaps)")
            for o, v in t.seen[p]:
                assert acked.get((p, o)) == v, f"{t.name} {p}@{o}: {v!r} != {acked.get((p, o))!r}"


def test_many_producers_and_tailing_consumers_at_once(tmp_path):
    with BrokerProcess(tmp_path / "data") as b:
        create(b.bootstrap, "busy")
        run_clients(b, "busy")


def test_consumers_and_producers_carry_on_through_a_kill_9(tmp_path):
    """Tailing consumers keep their positions across a broker crash: after the restart each
    one has read every record exactly once, in offset order, with no gap."""
    with BrokerProcess(tmp_path / "data") as b:
        create(b.bootstrap, "restarted")

        def crash(acks):
            deadline = time.monotonic() + WAIT_S
            while len(acks) < PRODUCERS * PER_PRODUCER // 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            b.kill()
            time.sleep(0.3)
            b.start()
        run_clients(b, "restarted", during=crash)
