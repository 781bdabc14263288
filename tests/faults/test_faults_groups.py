"""kill -9 of the broker while a consumer commits offsets: every acknowledged OffsetCommit is
there after the restart (the commit is answered only once fsynced, like acks=all), and a group
resumes at its committed offsets."""
from __future__ import annotations

import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.broker import BrokerProcess  # noqa: E402

TIMEOUT = 30
SETTINGS = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "5"}


def _committed(bootstrap, group, topic, partitions=2):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                got = c.committed([TopicPartition(topic, p) for p in range(partitions)],
                                  timeout=10)
                return {tp.partition: tp.offset for tp in got}
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


def test_acknowledged_commits_survive_kill_9(tmp_path):
    b = BrokerProcess(tmp_path / "data", settings=SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result(TIMEOUT)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "committer",
                      "enable.auto.commit": False})
        acked: list[int] = []
        stop = threading.Event()

        def commit_loop():
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    c.commit(offsets=[TopicPartition("t", 0, n), TopicPartition("t", 1, n)],
                             asynchronous=False)
                    acked.append(n)
                except KafkaException:
                    return          # the broker died under this commit: not acknowledged
        t = threading.Thread(target=commit_loop, daemon=True)
        t.start()
        deadline = time.monotonic() + TIMEOUT
        while len(acked) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        b.kill()
        stop.set()
        t.join(TIMEOUT)
        last_acked = acked[-1]
        assert last_acked >= 200
        b.start()
        got = _committed(b.bootstrap, "committer", "t")
        # everything acknowledged is there; at most the one commit in flight went further
        assert last_acked <= got[0] <= last_acked + 1 and got[1] == got[0], (last_acked, got)
        c.close()
    finally:
        b.stop()


def test_group_resumes_at_committed_offsets_after_kill_9(tmp_path):
    b = BrokerProcess(tmp_path / "data", settings=SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("in", 2, 1)])["in"].result(TIMEOUT)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(200):
            p.produce("in", value=b"%d" % i, partition=i % 2)
        assert p.flush(TIMEOUT) == 0

        def consumer():
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g",
                          "auto.offset.reset": "earliest", "enable.auto.commit": False,
                          "session.timeout.ms": 6000})
            c.subscribe(["in"])
            return c
        c = consumer()
        seen = []
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < 120 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append((m.partition(), m.offset()))
                if len(seen) % 10 == 0:
                    c.commit(asynchronous=False)
        committed_before = {tp.partition: tp.offset for tp in c.committed(
            [TopicPartition("in", 0), TopicPartition("in", 1)], timeout=60)}
        b.kill()
        c.close()
        b.start()
        assert _committed(b.bootstrap, "g", "in") == committed_before
        c = consumer()
        rest = []
        deadline = time.monotonic() + TIMEOUT
        while len(rest) < 200 - sum(committed_before.values()) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                rest.append((m.partition(), m.offset()))
        c.close()
        for part, off in rest:
            assert off >= committed_before[part]
        assert sorted(rest) == sorted((q, o) for q in (0, 1)
                                      for o in range(committed_before[q], 100))
    finally:
        b.stop()
