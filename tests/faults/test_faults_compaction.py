"""kill -9 the broker while its cleaner compacts a topic, start it again, and check: every
acknowledged record that should survive is at its acknowledged offset, each key's last record
is its last acknowledged write, and no `.cleaned` / `.swap` / `.deleted` file is left."""
from __future__ import annotations

import os
import random
import time

import pytest

from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.interop

TOPIC = "table"
KEYS = 300
PER_ROUND = 6_000
ROUNDS = 5
VALUE_PAD = b"x" * 150


def _produce(bootstrap, start, n, acked):
    # small batches: a produce request must fit in one (small) segment
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 16_384, "enable.idempotence": True,
                  "message.timeout.ms": 60_000})
    errors = []

    def cb(err, msg):
        if err is None:
            acked[msg.value()] = (msg.key(), msg.offset())
        else:
            errors.append(err)
    for i in range(start, start + n):
        p.produce(TOPIC, key=b"k%d" % (i % KEYS), value=b"%08d" % i + VALUE_PAD, partition=0,
                  on_delivery=cb)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert errors == []


def _read_all(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        c.assign([TopicPartition(TOPIC, 0, lo)])
        out, deadline = [], time.monotonic() + 60
        while (not out or out[-1][0] < hi - 1) and time.monotonic() < deadline:
            for m in c.consume(500, timeout=1.0):
                if m.error() is None:
                    out.append((m.offset(), m.key(), m.value()))
        return out, hi
    finally:
        c.close()


def _interrupted(log_text: str) -> bool:
    """A kill interrupted a cleaning pass: its files were found and dealt with at restart."""
    return "unfinished cleaning pass" in log_text or "swap of cleaned segment" in log_text


def _wait_for_a_pass(partition_dir, timeout: float) -> bool:
    """Until a cleaning pass has written files of its new segment (or timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(n.endswith(".cleaned") for n in os.listdir(partition_dir)):
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    return False


def test_kill_during_cleaning_loses_nothing_that_should_survive(tmp_path):
    rng = random.Random(7)
    data = tmp_path / "data"
    # a throttled cleaner: passes last long enough for the kills to land inside them
    b = BrokerProcess(data, settings={"log.cleaner.backoff.ms": 20,
                                      "log.cleaner.io.max.bytes.per.second": 4_000_000})
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(
            TOPIC, 1, 1, config={"cleanup.policy": "compact", "segment.bytes": "60000",
                                 "min.cleanable.dirty.ratio": "0.01"})])[TOPIC].result(30)
        acked: dict[bytes, tuple[bytes, int]] = {}
        rounds = 0
        # at least ROUNDS kills, and more (up to 3x) until one has interrupted a pass. Even
        # rounds kill at a random moment; odd rounds as soon as a pass has written its
        # `.cleaned` files (a random moment alone misses every pass on a quiet machine, where
        # they are short, and on a busy one, where they start late)
        while rounds < ROUNDS or (rounds < 3 * ROUNDS and not _interrupted(b.log_text())):
            _produce(b.bootstrap, rounds * PER_ROUND, PER_ROUND, acked)
            if rounds % 2:
                _wait_for_a_pass(data / f"{TOPIC}-0", timeout=5.0)
            else:
                time.sleep(rng.uniform(0.05, 0.6))
            b.kill()
            b.start()
            rounds += 1
        # the cleaner catches up after the last restart (a loaded machine may have killed
        # every pass before it removed anything): wait until it has, within a bound
        deadline = time.monotonic() + 90
        records, hi = _read_all(b.bootstrap)
        while len(records) >= rounds * PER_ROUND and time.monotonic() < deadline:
            time.sleep(1.0)
            records, hi = _read_all(b.bootstrap)
        log_text = b.log_text()
    finally:
        b.stop()
    assert "cleaned table-0" in log_text
    # at least one kill interrupted a pass (its files were found and dealt with at restart)
    assert _interrupted(log_text)
    assert hi == rounds * PER_ROUND
    assert len(acked) == rounds * PER_ROUND
    # every record read back is an acknowledged one, at its acknowledged offset
    for off, key, value in records:
        assert acked[value] == (key, off)
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(set(offsets))
    # each key's last record is its last acknowledged write
    last_acked: dict[bytes, int] = {}
    for key, off in acked.values():
        last_acked[key] = max(off, last_acked.get(key, -1))
    last_read: dict[bytes, int] = {}
    for off, key, _ in records:
        last_read[key] = off
    assert last_read == last_acked
    assert len(records) < rounds * PER_ROUND        # the cleaner did remove something
    leftovers = [n for n in os.listdir(data / f"{TOPIC}-0")
                 if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []
