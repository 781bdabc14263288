"""Exactly-once under kill -9 of the processes that hold transactions open.

- A Spark streaming query (its driver and executors, one process group) killed while a
  micro-batch's transactions are written but not yet committed, then restarted from its
  checkpoint, twice: the read_committed output is exactly the input, each record once.
- A transactional producer process killed inside a transaction: the coordinator aborts it after
  transaction.timeout.ms, and read_committed readers move past it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support.broker import BrokerProcess

TIMEOUT = 60
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_DRIVER = textwrap.dedent("""
    import os, sys
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from gregor.spark import register
    bootstrap, src, dst, ck = sys.argv[1:5]
    spark = (SparkSession.builder.master("local[2]").appName("eos-fault")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "300").load()
         .selectExpr("value", "partition")
         .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", dst).option("deliveryGuarantee", "exactly-once")
         .option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    print("query finished", flush=True)
    spark.stop()
""")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _offsets(bootstrap, topic, partitions):
    """(high watermarks, last stable offsets) of the topic's partitions."""
    from gregor.client.consumer import Consumer
    ends = []
    for iso in ("read_uncommitted", "read_committed"):
        c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": iso})
        try:
            ends.append(c.end_offsets([(topic, p) for p in range(partitions)], timeout=10))
        finally:
            c.close()
    return ends


def _read_committed(bootstrap, topic, partitions, expect, isolation="read_committed"):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                  "fetch.max.wait.ms": 100})
    c.assign([(topic, p, -2) for p in range(partitions)])
    out, deadline = [], time.monotonic() + TIMEOUT
    while len(out) < expect and time.monotonic() < deadline:
        out.extend(r.value for r in c.poll(0.5))
    out.extend(r.value for r in c.poll(1.0))      # anything past the expected count
    c.close()
    return out


@pytest.mark.spark
def test_spark_query_killed_mid_batch_restarts_exactly_once(tmp_path):
    pytest.importorskip("pyspark", reason="the Spark fault test needs pyspark")
    from gregor.client.admin import AdminClient, NewTopic
    from gregor.client.producer import Producer
    n = 3000
    b = BrokerProcess(tmp_path / "data", settings={
        "transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}).start()
    try:
        bs = b.bootstrap
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("src", 2, 1), NewTopic("dst", 2, 1)])
        admin.close()
        p = Producer({"bootstrap.servers": bs})
        for i in range(n):
            p.send("src", b"%d" % i, partition=i % 2)
        p.flush()
        p.close()
        ck = str(tmp_path / "ck")
        args = [sys.executable, "-c", _DRIVER, bs, "src", "dst", ck]
        kills = 0
        for attempt in range(2):
            proc = subprocess.Popen(args, env=_env(), start_new_session=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            killed_open = False
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and proc.poll() is None:
                hw, lso = _offsets(bs, "dst", 2)
                if any(hw[tp] > lso[tp] for tp in hw):  # a batch written, not yet committed
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed_open = True
                    break
                time.sleep(0.05)
            proc.wait(30)
            if killed_open:
                kills += 1
            else:
                out = proc.stdout.read().decode(errors="replace")
                pytest.fail(f"the query ended before a kill point (attempt {attempt}): {out[-2000:]}")
        assert kills == 2
        # the last run finishes the stream from the checkpoint
        res = subprocess.run(args, env=_env(), capture_output=True, timeout=300)
        assert res.returncode == 0, (res.stdout + res.stderr).decode(errors="replace")[-4000:]
        got = sorted(int(v) for v in _read_committed(bs, "dst", 2, n))
        assert len(got) == n, f"{len(got)} records, {len(set(got))} distinct"
        assert got == list(range(n))
        hw, lso = _offsets(bs, "dst", 2)
        assert hw == lso, "a killed run's transaction is still open"
        # the killed runs' open transactions did reach the log, and were aborted
        assert len(_read_committed(bs, "dst", 2, n + 1, "read_uncommitted")) > n
    finally:
        b.stop()


_TXN_PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "doomed",
                  "transaction.timeout.ms": 3000, "linger.ms": 1})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(50):
        p.produce("t", value=b"open-%d" % i, partition=0)
    p.flush(30)
    print("written", flush=True)
    time.sleep(600)
""")


def test_a_killed_transactional_producers_transaction_is_aborted(tmp_path):
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    b = BrokerProcess(tmp_path / "data", settings={
        "transaction.state.log.num.partitions": 3,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}).start()
    try:
        bs = b.bootstrap
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(TIMEOUT)
        proc = subprocess.Popen([sys.executable, "-c", _TXN_PRODUCER, bs], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout.readline().strip() == b"written"
        proc.kill()
        proc.wait(10)
        plain = Producer({"bootstrap.servers": bs})
        plain.produce("t", value=b"after", partition=0)
        plain.flush(TIMEOUT)
        hw, lso = _offsets(bs, "t", 1)
        assert hw[("t", 0)] == 51 and lso[("t", 0)] == 0   # held at the open transaction
        # aborted by the coordinator after its 3 s timeout: readers move on, without it
        assert _read_committed(bs, "t", 1, 1) == [b"after"]
        hw, lso = _offsets(bs, "t", 1)
        assert lso == hw and hw[("t", 0)] == 52          # 50 aborted, 1 marker, 1 committed
    finally:
        b.stop()
