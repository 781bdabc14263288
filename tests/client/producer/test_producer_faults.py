"""The producer when the broker misbehaves: stopped (SIGSTOP) and restarted (kill -9)."""
from __future__ import annotations

import collections
import os
import signal
import tracemalloc

import pytest

from gregor.client.errors import KafkaTimeoutError
from gregor.client.network import NetworkClient
from gregor.client.producer import Producer

ck = pytest.importorskip("confluent_kafka")


def create_topic(bootstrap, name, partitions):
    net = NetworkClient({"bootstrap.servers": bootstrap})
    try:
        resp = net.request(None, "CreateTopics", {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
            "timeout_ms": 10000}, timeout=30)
        assert resp["topics"][0]["error_code"] == 0, resp
    finally:
        net.close()


def read_all(bootstrap, topic, partitions, count):
    from tests.interop.test_interop_confluent_kafka import ConfluentKafkaClient
    return ConfluentKafkaClient().consume(bootstrap, topic, partitions, count)


BUFFER = 512 * 1024
# What may exceed buffer.memory while the broker is stopped: the encoded copies of the few
# batches already drained into requests (max.in.flight x batch.size), the request frames,
# and interpreter noise. A leak per record would blow far past it.
SLACK = 384 * 1024


def test_stopped_broker_blocks_send_bounds_memory_and_close_returns(broker):
    create_topic(broker.bootstrap, "stopped", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": 1, "linger.ms": 5,
                  "buffer.memory": BUFFER, "max.block.ms": 500, "request.timeout.ms": 1000,
                  "delivery.timeout.ms": 60000})
    p.send("stopped", b"warm-up").result(30)
    os.kill(broker.pid, signal.SIGSTOP)
    try:
        kept = []
        raised = None
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        # Bounded: ten times what buffer.memory can hold.
        for i in range(10 * BUFFER // 1000):
            try:
                fut = p.send("stopped", os.urandom(1000))   # a distinct object per record
            except KafkaTimeoutError as e:
                raised = e
                break
            if i < 3:
                kept.append(fut)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        assert raised is not None, "send() never blocked although the broker is stopped"
        assert "max.block.ms" in str(raised)
        assert peak <= BUFFER + SLACK, f"{peak} bytes held for a {BUFFER}-byte buffer.memory"
        p.close(timeout=1.0)
        assert not p._sender.thread.is_alive()
        assert all(f.done() and f.exception(0) is not None for f in kept)
    finally:
        os.kill(broker.pid, signal.SIGCONT)


def test_broker_restart_loses_nothing_acknowledged_and_duplicates_nothing(broker):
    create_topic(broker.bootstrap, "restart", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                  "retry.backoff.ms": 50, "request.timeout.ms": 5000,
                  "reconnect.backoff.max.ms": 200, "delivery.timeout.ms": 90000})
    acked, failed = {}, []
    n = 4000

    def cb(i):
        def done(md, err):
            if err is None:
                acked[i] = (md.partition, md.offset)
            else:
                failed.append((i, err))
        return done
    try:
        for i in range(n):
            p.send("restart", b"value-%06d" % i, key=b"k%d" % (i % 50), callback=cb(i))
            if i == n // 2:
                broker.kill()
                broker.start()
        p.flush(120)
    finally:
        p.close(30)
    assert not failed, f"{len(failed)} failed, first {failed[:3]}"
    got = read_all(broker.bootstrap, "restart", 2, n)
    counts = collections.Counter(g.value for g in got)
    dupes = [v for v, c in counts.items() if c > 1]
    assert not dupes, f"{len(dupes)} values written twice, e.g. {dupes[:3]}"
    where = {g.value: (g.partition, g.offset) for g in got}
    lost = [i for i in acked if b"value-%06d" % i not in where]
    assert not lost, f"{len(lost)} acknowledged records missing, e.g. {lost[:5]}"
    assert all(where[b"value-%06d" % i] == acked[i] for i in acked)
    assert len(acked) == n
