"""Checks the fault tests share: the broker is alive and sane, and real clients still work."""
from __future__ import annotations

import time

from tests.faults import frames


def assert_alive(b, corr: int = 4242) -> None:
    """The process runs and answers ApiVersions v0 on a fresh connection."""
    assert b.proc.poll() is None, (f"the broker died (exit {b.proc.returncode}); output:\n"
                                   f"{b.log_text()[-3000:]}")
    with frames.connect(b.port) as s:
        s.sendall(frames.api_versions_v0(corr))
        got_corr, body = frames.read_response(s)
    assert got_corr == corr
    assert body[:2] == b"\x00\x00", f"ApiVersions v0 error code {body[:2].hex()}"


def tracebacks(b) -> list[str]:
    """Python tracebacks in the broker's output: hostile input deserves one clear log line,
    never a stack trace."""
    text = b.log_text() if hasattr(b, "log_text") else ""
    blocks = text.split("Traceback (most recent call last):")[1:]
    return [blk[:1500] for blk in blocks]


def real_client_roundtrip(bootstrap: str, topic: str, n: int = 100) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep a reference while waiting
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(60) == 0, "a real producer could not deliver after the hostile input"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "after-fuzz",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        for m in c.consume(100, 0.5):
            assert not m.error(), m.error()
            got.append((m.offset(), m.key(), m.value()))
    c.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(n)]


def read_whole_partition(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-check", "check.crcs": True,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
        c.assign([TopicPartition(topic, 0, lo)])
        deadline = time.monotonic() + 60
        last = lo - 1
        while last < hi - 1 and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    continue
                last = m.offset()
        assert last >= hi - 1, f"read up to offset {last}, high watermark {hi}"
    finally:
        c.close()
