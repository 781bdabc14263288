"""The exactly-once sink (deliveryGuarantee=exactly-once): batch and streaming writes become
visible whole to read_committed readers, and a micro-batch replayed after the driver lost its
commit (the sink had committed, Spark's commit log had not) is not written twice."""
from __future__ import annotations

from pathlib import Path

import pytest

from gregor.spark.options import OptionError, parse_sink_options

pytestmark = pytest.mark.spark


def _read_all(bootstrap, topic, partitions, isolation, expect, timeout=30.0):
    import time

    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                  "fetch.max.wait.ms": 100})
    c.assign([(topic, p, -2) for p in range(partitions)])
    out, deadline = [], time.monotonic() + timeout
    while len(out) < expect and time.monotonic() < deadline:
        out.extend(r.value for r in c.poll(0.5))
    time.sleep(0.3)
    out.extend(r.value for r in c.poll(0.3))
    c.close()
    return out


def test_options_of_the_exactly_once_sink():
    opts = parse_sink_options({"topic": "t", "deliveryGuarantee": "exactly-once",
                               "kafka.bootstrap.servers": "x"}, ["value"])
    assert opts.exactly_once and opts.transactional_id_prefix == "gregor-spark"
    with pytest.raises(OptionError, match="needs the option 'topic'"):
        parse_sink_options({"deliveryGuarantee": "exactly-once",
                            "kafka.bootstrap.servers": "x"}, ["value", "topic"])
    with pytest.raises(OptionError, match="deliveryGuarantee"):
        parse_sink_options({"topic": "t", "deliveryGuarantee": "twice",
                            "kafka.bootstrap.servers": "x"}, ["value"])
    with pytest.raises(OptionError, match="transactional.id"):
        parse_sink_options({"topic": "t", "deliveryGuarantee": "exactly-once",
                            "kafka.transactional.id": "x", "kafka.bootstrap.servers": "x"},
                           ["value"])


def test_batch_write_exactly_once(spark, bootstrap, make_topic):
    topic = make_topic(3)
    df = spark.range(0, 3000, numPartitions=3).selectExpr("cast(id as string) as value")
    (df.write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("deliveryGuarantee", "exactly-once").mode("append").save())
    got = _read_all(bootstrap, topic, 3, "read_committed", 3000)
    assert sorted(int(v) for v in got) == list(range(3000))
    # the Spark source reads it back with read_committed too (markers leave offset gaps)
    back = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
            .load().selectExpr("cast(value as string) as v").collect())
    assert sorted(int(r.v) for r in back) == list(range(3000))


def test_streaming_exactly_once_survives_a_replayed_micro_batch(spark, bootstrap, make_topic,
                                                                 tmp_path):
    from gregor.client.producer import Producer
    src, dst = make_topic(2), make_topic(2)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(500):
        p.send(src, b"%d" % i, partition=i % 2)
    p.flush()
    p.close()
    ck = str(tmp_path / "ck")

    def run():
        q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", src).option("startingOffsets", "earliest").load()
             .selectExpr("value", "partition")
             .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", dst).option("deliveryGuarantee", "exactly-once")
             .option("checkpointLocation", ck).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        return sum(p["numInputRows"] for p in q.recentProgress)
    assert run() == 500
    assert sorted(int(v) for v in _read_all(bootstrap, dst, 2, "read_committed", 500)) == \
        list(range(500))
    # The driver "dies" after the sink committed batch 0 but before Spark recorded it: Spark
    # replays batch 0 on restart. The sink's tasks find it committed and write nothing.
    commits = Path(ck) / "commits"
    last = max(commits.iterdir(), key=lambda f: int(f.name) if f.name.isdigit() else -1)
    last.unlink()
    for crc in commits.glob(f".{last.name}.crc"):
        crc.unlink()
    assert run() > 0, "the second run did not replay the batch"
    got = _read_all(bootstrap, dst, 2, "read_committed", 500)
    assert sorted(int(v) for v in got) == list(range(500)), "a replayed batch was written twice"
    # read_uncommitted readers see the same: nothing was even written again
    raw = _read_all(bootstrap, dst, 2, "read_uncommitted", 500)
    assert len(raw) == 500



def _open_transaction(bootstrap, topic) -> dict:
    """{isolation level: end offset} of partition 0, once they agree (no transaction open
    there) or after 30 s."""
    import time

    from gregor.client.consumer import Consumer
    ends, deadline = {}, time.monotonic() + 30
    while time.monotonic() < deadline:
        for iso in ("read_uncommitted", "read_committed"):
            c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": iso})
            ends[iso] = c.end_offsets([(topic, 0)])[(topic, 0)]
            c.close()
        if ends["read_uncommitted"] == ends["read_committed"]:
            break
        time.sleep(0.2)
    return ends


def test_a_failed_write_leaves_no_transaction_open(spark, bootstrap, make_topic):
    """A task that fails after it sent records: Spark kills its Python worker, so the task
    cannot abort; the driver's abort fences its transactional id, which aborts it. Without
    that, read_committed readers of the topic would wait for the broker to time the
    transaction out (transactionTimeoutMs, 15 minutes by default)."""
    from pyspark.sql.functions import udf

    from gregor.spark.client import COALESCE_BYTES
    topic = make_topic(1)
    # The task's sink sends once COALESCE_BYTES of rows have gathered: the failing row comes
    # after one and a half of those, and waits until records are in the topic.
    fail_at = int(1.5 * COALESCE_BYTES / 106)     # rows of ~106 B
    message = f"row {fail_at} fails the task"

    @udf("long")
    def fail_once_sent(i):
        if i == fail_at:
            import time

            from gregor.client.consumer import Consumer
            c = Consumer({"bootstrap.servers": bootstrap})
            deadline = time.monotonic() + 60
            while not c.end_offsets([(topic, 0)])[(topic, 0)] and time.monotonic() < deadline:
                time.sleep(0.05)
            c.close()
            raise RuntimeError(message)
        return i
    df = spark.range(0, fail_at + 10000, numPartitions=1).selectExpr(
        "id", "repeat('x', 100) as pad").select(
        fail_once_sent("id").cast("string").alias("n"), "pad").selectExpr(
        "concat(n, pad) as value")
    with pytest.raises(Exception, match=message):
        (df.write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", topic).option("deliveryGuarantee", "exactly-once")
         .mode("append").save())
    ends = _open_transaction(bootstrap, topic)
    assert ends["read_uncommitted"] > 0, "the failing task sent nothing: the test proves nothing"
    assert ends["read_committed"] == ends["read_uncommitted"], \
        f"the failed task's transaction is still open: {ends}"
    assert _read_all(bootstrap, topic, 1, "read_committed", 1, timeout=2) == []
