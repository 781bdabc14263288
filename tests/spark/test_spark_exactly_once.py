"""The exactly-once sink (deliveryGuarantee=exactly-once): batch and streaming writes become
visible whole to read_committed readers, and a micro-batch replayed after the driver lost its
commit (the sink had committed, Spark's commit log had not) is not written twice."""
from __future__ import annotations

import shutil
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
