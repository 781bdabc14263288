"""kill -9 the broker while real clients produce, start it again on the same data dir and port,
and check the log: every acknowledged record is at its acknowledged offset, offsets are
contiguous, and an idempotent producer left no duplicates.

A kill -9 is a process crash, not a machine crash: what the broker handed to the OS with write()
before it answered survives in the page cache, so nothing it acknowledged may be missing.
"""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.interop

TOTAL = 30_000        # records each producer tries to send
CHUNK = 200           # records per burst; bursts are paced so the kill lands mid-stream
PACE_S = 0.01
KILLS_AT_ACKS = (4_000, 12_000)  # two crashes per run: one early, one with the log warm
# At most this many records are sent and not yet answered: acknowledgements then climb
# steadily, so each kill lands with records in flight and some are left to send after the
# last one (unbounded, a producer queued every record while the broker restarted and one
# answer acknowledged them all before the last kill).
WINDOW = 2_000
PARTITIONS = 2
# Bounds that only stop a hung test (the producer retries through the restart).
WAIT_S = 120.0


def value_of(i: int) -> bytes:
    return b"record-%08d" % i


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=60)


class Acks:
    """Acknowledged records: value -> (partition, offset); and failures, which are allowed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[tuple[bytes, str]] = []
        self.twice: list[bytes] = []  # callbacks swallow exceptions, so collect and assert later

    def ok(self, value: bytes, partition: int, offset: int) -> None:
        with self.lock:
            if value in self.acked:
                self.twice.append(value)
            self.acked[value] = (partition, offset)

    def fail(self, value: bytes, err) -> None:
        with self.lock:
            self.failed.append((value, str(err)))

    def count(self) -> int:
        with self.lock:
            return len(self.acked)


def confluent_producer(bootstrap: str, topic: str, acks: str, idempotent: bool, acks_box: Acks):
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                  "enable.idempotence": idempotent, "linger.ms": 5,
                  # keep retrying through the restart; give up only long after it
                  "message.timeout.ms": int(WAIT_S * 1000), "reconnect.backoff.max.ms": 200})

    def send(i: int) -> None:
        v = value_of(i)

        def cb(err, msg, v=v):
            if err is None:
                acks_box.ok(v, msg.partition(), msg.offset())
            else:
                acks_box.fail(v, err)
        while True:
            try:
                p.produce(topic, value=v, key=b"k%d" % (i % 97), on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)

    def flush() -> int:
        return p.flush(WAIT_S)

    def close() -> None:
        pass  # confluent-kafka producers close when garbage-collected

    def pump() -> None:
        p.poll(0.005)  # delivery reports only arrive through poll()

    return send, flush, close, pump


def kafka_python_producer(bootstrap: str, topic: str, acks: str, idempotent: bool,
                          acks_box: Acks):
    from kafka import KafkaProducer
    cfg = {"bootstrap_servers": bootstrap, "linger_ms": 5, "reconnect_backoff_max_ms": 200,
           "delivery_timeout_ms": int(WAIT_S * 1000)}
    if not idempotent:
        cfg["acks"] = int(acks)  # kafka-python 3 defaults to idempotence with acks=all
    p = KafkaProducer(**cfg)
    assert not idempotent or p.config["enable_idempotence"], "expected kafka-python's default idempotence"

    def send(i: int) -> None:
        v = value_of(i)
        f = p.send(topic, value=v, key=b"k%d" % (i % 97))
        f.add_callback(lambda md, v=v: acks_box.ok(v, md.partition, md.offset))
        f.add_errback(lambda e, v=v: acks_box.fail(v, e))

    def flush() -> int:
        p.flush(timeout=WAIT_S)
        return 0

    def close() -> None:
        p.close(timeout=10)

    def pump() -> None:
        time.sleep(0.005)  # callbacks run on kafka-python's own I/O thread

    return send, flush, close, pump


CASES = {
    # name: (producer factory, acks, idempotent)
    "confluent-acks1": (confluent_producer, "1", False),
    "confluent-idempotent-acksall": (confluent_producer, "all", True),
    "kafka-python-acks1": (kafka_python_producer, "1", False),
    "kafka-python-default-idempotent": (kafka_python_producer, "all", True),
}


def read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition, read with an assigned consumer up to the high
    watermark: {partition: [(offset, value), ...]}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-check",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {}
        for p in range(PARTITIONS):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
            assert lo == 0, f"partition {p}: log start offset {lo} after a restart, expected 0"
            ends[p] = hi
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        out = {p: [] for p in range(PARTITIONS)}
        remaining = sum(ends.values())
        deadline = time.monotonic() + WAIT_S
        while remaining > 0 and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    continue
                if m.offset() < ends[m.partition()]:
                    out[m.partition()].append((m.offset(), m.value()))
                    remaining -= 1
        assert remaining == 0, f"{remaining} records below the high watermarks {ends} not read"
        return out
    finally:
        c.close()


def _check_log(logs, acks_box: Acks, idempotent: bool) -> None:
    assert not acks_box.twice, f"records acknowledged twice: {acks_box.twice[:5]}"
    for p, recs in logs.items():
        offsets = [o for o, _ in recs]
        assert offsets == list(range(len(offsets))), (
            f"partition {p}: offsets are not contiguous from 0 after the restart")
    at = {(p, o): v for p, recs in logs.items() for o, v in recs}
    lost = [(v, po) for v, po in acks_box.acked.items() if at.get(po) != v]
    assert not lost, (f"{len(lost)} acknowledged records are missing or elsewhere after kill -9, "
                      f"e.g. {lost[:5]} (found {[at.get(po) for _, po in lost[:5]]})")
    if idempotent:
        dupes = [v for v, n in Counter(at.values()).items() if n > 1]
        assert not dupes, f"the idempotent producer left {len(dupes)} duplicates, e.g. {dupes[:5]}"
        if not acks_box.failed:
            assert len(at) == len(acks_box.acked), (
                f"{len(at)} records in the log, {len(acks_box.acked)} acknowledged")


@pytest.mark.parametrize("case", list(CASES))
def test_kill_9_while_producing_loses_no_acknowledged_record(tmp_path, case):
    factory, acks, idempotent = CASES[case]
    b = BrokerProcess(tmp_path / "data").start()
    try:
        topic = f"crash-{case}"
        create_topic(b.bootstrap, topic)
        acks_box = Acks()
        send, flush, close, pump = factory(b.bootstrap, topic, acks, idempotent, acks_box)

        def send_all():
            for start in range(0, TOTAL, CHUNK):
                deadline = time.monotonic() + WAIT_S
                while (start - acks_box.count() - len(acks_box.failed) > WINDOW
                       and time.monotonic() < deadline):
                    pump()
                for i in range(start, min(start + CHUNK, TOTAL)):
                    send(i)
                time.sleep(PACE_S)

        worker = threading.Thread(target=send_all, name="crash-producer", daemon=True)
        worker.start()
        acked_at_kill = []
        for threshold in KILLS_AT_ACKS:
            deadline = time.monotonic() + WAIT_S
            while acks_box.count() < threshold and time.monotonic() < deadline:
                pump()
            assert acks_box.count() >= threshold, (
                f"only {acks_box.count()} acks before kill; failures: {acks_box.failed[:3]}")
            b.kill()
            acked_at_kill.append(acks_box.count())
            time.sleep(0.3)
            b.start()
        worker.join(WAIT_S)
        assert not worker.is_alive(), "the producer thread did not finish"
        assert flush() == 0, "records still unacknowledged after the restart"
        close()
        assert acks_box.count() > acked_at_kill[-1], "nothing was acknowledged after a restart"
        logs = read_all(b.bootstrap, topic)
        print(f"{case}: {acked_at_kill} acked before the kill, {acks_box.count()} in all, "
              f"{len(acks_box.failed)} failed, {sum(map(len, logs.values()))} in the log")
        assert acked_at_kill[-1] < TOTAL, "a kill came after the producer finished; pace it more"
        _check_log(logs, acks_box, idempotent)
    finally:
        b.stop()


def test_sigterm_while_producing_exits_0_and_keeps_every_acknowledged_record(tmp_path):
    """SIGTERM: stop accepting, finish in-flight requests, flush, exit 0; the next start
    finds every acknowledged record and the producer (retrying) completes after it."""
    b = BrokerProcess(tmp_path / "data").start()
    try:
        topic = "sigterm"
        create_topic(b.bootstrap, topic)
        acks_box = Acks()
        send, flush, close, pump = confluent_producer(b.bootstrap, topic, "all", True, acks_box)
        for i in range(TOTAL // 3):
            send(i)
        deadline = time.monotonic() + WAIT_S
        while acks_box.count() < 2_000 and time.monotonic() < deadline:
            pump()
        assert b.stop() == 0, f"SIGTERM exit code is not 0:\n{b.log_text()[-2000:]}"
        assert "Traceback" not in b.output(), b.output()[-3000:]
        b.start()
        assert flush() == 0
        logs = read_all(b.bootstrap, topic)
        _check_log(logs, acks_box, idempotent=True)
        assert sum(map(len, logs.values())) == TOTAL // 3
    finally:
        b.stop()


def test_sigterm_with_long_polling_consumers_exits_0_promptly(tmp_path):
    """Fetches parked in the purgatory (fetch.wait.max.ms=5000 on an idle topic) do not keep a
    graceful stop from finishing with exit code 0."""
    b = BrokerProcess(tmp_path / "data").start()
    consumers = []
    try:
        create_topic(b.bootstrap, "idle")
        for i in range(5):
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"idle-{i}",
                          "fetch.wait.max.ms": 5000})
            c.assign([TopicPartition("idle", 0, 0)])
            c.consume(1, 0.5)  # a fetch is now waiting on the broker
            consumers.append(c)
        assert b.stop(timeout=WAIT_S) == 0, b.log_text()[-2000:]
        assert "Traceback" not in b.output(), b.output()[-3000:]
    finally:
        b.stop()
        for c in consumers:
            c.close()
