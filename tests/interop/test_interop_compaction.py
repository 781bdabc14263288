"""Real clients read a compacted topic: kafka-python, confluent-kafka and kcat (when installed)
each read the same records, at their produced offsets, across the gaps compaction left, and
each key's last record is its last write (tombstones included, as null values)."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.interop

TOPIC = "table"
N = 4_000
KEYS = 50
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    """(bootstrap, acked {(key, value): offset}, log end) once the cleaner has run."""
    b = BrokerProcess(tmp_path_factory.mktemp("compaction") / "data",
                      settings={"log.cleaner.backoff.ms": 20})
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "30000",
            "min.cleanable.dirty.ratio": "0.01"})])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 8192, "compression.type": "lz4"})
        acked = {}

        def cb(err, msg):
            assert err is None, err
            acked[msg.offset()] = (msg.key(), msg.value())
        for i in range(N):
            value = None if i % 97 == 0 else b"value-%d" % i      # some tombstones
            p.produce(TOPIC, key=b"key-%d" % (i % KEYS), value=value, partition=0,
                      on_delivery=cb)
        assert p.flush(60) == 0
        deadline = time.monotonic() + 60
        while "cleaned table-0" not in b.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "cleaned table-0" in b.output()
        time.sleep(0.5)
        yield b.bootstrap, acked
    finally:
        b.stop()


def _check(got, acked):
    assert got, "nothing read"
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets))
    for off, key, value in got:
        assert acked[off] == (key, value)
    assert len(got) < len(acked)                     # compaction removed records
    last_written = {}
    for off in sorted(acked):
        last_written[acked[off][0]] = off
    last_read = {key: off for off, key, _ in got}
    assert last_read == last_written


def test_confluent_kafka_reads_the_compacted_topic(compacted):
    bootstrap, acked = compacted
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "c1", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got, deadline = [], time.monotonic() + 30
        while (not got or got[-1][0] < max(acked)) and time.monotonic() < deadline:
            for m in c.consume(500, timeout=1.0):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    _check(got, acked)


def test_kafka_python_reads_the_compacted_topic(compacted):
    bootstrap, acked = compacted
    from kafka import KafkaConsumer, TopicPartition as TP
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=5000)
    try:
        c.assign([TP(TOPIC, 0)])
        c.seek_to_beginning()
        got = []
        for m in c:
            got.append((m.offset, m.key, m.value))
            if m.offset >= max(acked):
                break
    finally:
        c.close()
    _check(got, acked)


@pytest.mark.skipif(KCAT is None, reason="the kcat binary is not installed")
def test_kcat_reads_the_compacted_topic(compacted):
    bootstrap, acked = compacted
    out = subprocess.run([KCAT, "-C", "-b", bootstrap, "-t", TOPIC, "-p", "0", "-o",
                          "beginning", "-e", "-Z", "-f", "%o\t%k\t%S\t%s\n"],
                         capture_output=True, timeout=60, check=True).stdout
    got = []
    for line in out.decode().splitlines():
        off, key, size, value = line.split("\t", 3)
        got.append((int(off), key.encode(), None if size == "-1" else value.encode()))
    _check(got, acked)
