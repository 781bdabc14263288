"""Consumers and producers reused across the Spark tasks of a Python worker (pool.py): bounded,
closed when idle, never reused after a failure; and, through real Spark, tasks of repeated
reads and writes stop opening connections and producer ids."""
from __future__ import annotations

import re
import socket
import urllib.request

import pytest

from gregor.spark.pool import ClientPool, config_key


class FakeClient:
    def __init__(self, name):
        self.name, self.closed = name, False


def make_pool(capacity=2, idle=10.0):
    clock = [0.0]
    closed = []

    def close(c):
        c.closed = True
        closed.append(c.name)
    return ClientPool("test", capacity, idle, close, clock=lambda: clock[0]), clock, closed


def test_clients_are_reused_by_configuration():
    pool, _, _ = make_pool()
    a = pool.borrow(config_key({"x": 1}), lambda: FakeClient("a"))
    pool.give_back(config_key({"x": 1}), a)
    assert pool.borrow(config_key({"x": "1"}), lambda: FakeClient("new")) is a  # same settings
    pool.give_back(config_key({"x": 1}), a)
    other = pool.borrow(config_key({"x": 2}), lambda: FakeClient("b"))
    assert other.name == "b" and (pool.created, pool.reused) == (2, 1)


def test_a_borrowed_client_is_not_lent_twice_and_failures_close():
    pool, _, closed = make_pool()
    key = config_key({})
    a = pool.borrow(key, lambda: FakeClient("a"))
    b = pool.borrow(key, lambda: FakeClient("b"))     # a is out: a second one is made
    assert a is not b
    pool.discard(a)                                   # a failed task's client
    assert closed == ["a"] and pool.idle_count() == 0


def test_bounded_least_recently_used_and_idle_clients_close():
    pool, clock, closed = make_pool(capacity=2, idle=10.0)
    for name in "abc":
        pool.give_back(config_key({"n": name}), FakeClient(name))
        clock[0] += 1
    assert closed == ["a"] and pool.idle_count() == 2   # capacity 2: the oldest went
    clock[0] = 11.5                                      # b idle 10.5 s, c 9.5 s
    assert pool.evict_idle() == 1 and closed == ["a", "b"]
    pool.close_all()
    assert closed == ["a", "b", "c"] and pool.idle_count() == 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _requests(metrics_port, api):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    total = 0.0
    for m in re.finditer(r'^gregor_broker_requests_total\{[^}]*api="%s"[^}]*\} (\S+)$' % api, text, re.M):
        total += float(m.group(1))
    return int(total)


@pytest.mark.spark
def test_spark_tasks_reuse_the_workers_clients(spark, tmp_path):
    """On a broker of their own: five batch writes of four tasks, then a streaming query of
    four micro-batches of four read tasks. Without the pool every task opens its connections
    (two ApiVersions each: bootstrap and partition leader) and every write task gets a producer
    id (InitProducerId): 20 producer ids, 40 write and 32 read connections. With it only the
    first task of each Python worker does; the query's driver opens its own once."""
    from tests.support.broker import BrokerProcess

    from gregor.client.admin import AdminClient, NewTopic
    metrics = _free_port()
    broker = BrokerProcess(tmp_path / "broker", metrics_port=metrics).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("pooled", 4, 1)])
        admin.close()
        df = spark.range(0, 4000, numPartitions=4).selectExpr("cast(id as string) as value")
        before = _requests(metrics, "ApiVersions")
        for _ in range(5):
            (df.write.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", "pooled").mode("append").save())
        write_connections = _requests(metrics, "ApiVersions") - before
        producer_ids = _requests(metrics, "InitProducerId")
        before = _requests(metrics, "ApiVersions")
        q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", "pooled").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "5000").load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
        assert len([p for p in q.recentProgress if p["numInputRows"]]) == 4
        read_connections = _requests(metrics, "ApiVersions") - before
    finally:
        broker.stop()
    assert producer_ids <= 4, f"{producer_ids} producer ids for 20 write tasks: producers not reused"
    assert write_connections <= 8, f"{write_connections} connections for 20 write tasks"
    assert read_connections <= 12, f"{read_connections} connections for 16 read tasks"
