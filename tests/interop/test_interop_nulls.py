"""Null is not empty: null keys, null values (tombstones) and null header values survive the
broker distinct from empty ones, as every client reads them back."""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0

# (key, value, headers)
RECORDS = [
    (None, b"value-without-key", [("h", b"x")]),
    (b"tombstone", None, []),
    (b"", b"", [("empty", b"")]),
    (None, None, [("null", None), ("null", b"not-null")]),
    (b"k", b"v", [("h", None)]),
]


@pytest.fixture(scope="module")
def null_topic(target):
    p = Producer({"bootstrap.servers": target.bootstrap})
    topic = "nulls"
    for k, v, h in RECORDS:
        p.produce(topic, key=k, value=v, headers=h, partition=0)
    assert p.flush(TIMEOUT_S) == 0
    return topic


def test_confluent_kafka_reads_nulls(target, null_topic):
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "nulls",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(null_topic, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < len(RECORDS) and time.monotonic() < deadline:
        for m in c.consume(10, 0.5):
            assert not m.error(), m.error()
            got.append((m.key(), m.value(), m.headers() or []))
    c.close()
    assert got == [(k, v, h) for k, v, h in RECORDS]


def test_kafka_python_reads_nulls(target, null_topic):
    from kafka import KafkaConsumer, TopicPartition as KTP
    c = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=None, enable_auto_commit=False)
    c.assign([KTP(null_topic, 0)])
    c.seek_to_beginning()
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < len(RECORDS) and time.monotonic() < deadline:
        for recs in c.poll(500).values():
            got += [(m.key, m.value, list(m.headers)) for m in recs]
    c.close()
    assert got == [(k, v, h) for k, v, h in RECORDS]


def test_aiokafka_reads_nulls(target, null_topic):
    from aiokafka import AIOKafkaConsumer, TopicPartition as ATP

    async def go():
        c = AIOKafkaConsumer(bootstrap_servers=target.bootstrap, group_id=None,
                             enable_auto_commit=False)
        await c.start()
        try:
            c.assign([ATP(null_topic, 0)])
            await c.seek_to_beginning()
            got = []
            deadline = time.monotonic() + TIMEOUT_S
            while len(got) < len(RECORDS) and time.monotonic() < deadline:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    got += [(m.key, m.value, list(m.headers)) for m in recs]
            return got
        finally:
            await c.stop()
    assert asyncio.run(go()) == [(k, v, h) for k, v, h in RECORDS]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="the kcat binary is not installed")
def test_kcat_reads_nulls(target, null_topic):
    out = subprocess.run(["kcat", "-C", "-b", target.bootstrap, "-t", null_topic, "-p", "0",
                          "-o", "beginning", "-c", str(len(RECORDS)), "-J", "-q"],
                         capture_output=True, timeout=TIMEOUT_S, check=True).stdout
    got = [json.loads(line) for line in out.decode().splitlines()]

    def s(b):
        return None if b is None else b.decode()
    assert [(m["key"], m["payload"]) for m in got] == [(s(k), s(v)) for k, v, _ in RECORDS]
    assert [m.get("headers") or [] for m in got] == \
        [[x for name, val in h for x in (name, s(val))] for _, _, h in RECORDS]
