"""format("gregor") behaves as Spark's format("kafka") where a Spark user would notice: save
modes, output modes, startingOffsets=latest on a live topic, admission control, shared option
dicts, subscribePattern, headers, option and schema errors at load(), sink column names, data
loss on added partitions, partition sizing and offset-fetch retries. Real Spark (local[2])."""
from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark,
              pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]


def produce(bootstrap, topic, records, headers_for=None):
    """records: (partition, value) pairs, sent in order and flushed."""
    from gregor.client.producer import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    try:
        futures = [p.send(topic, value=v, partition=part,
                          headers=headers_for(v) if headers_for else None) for part, v in records]
        p.flush()
        for f in futures:
            f.result()
    finally:
        p.close()


def wait_for(condition, timeout=90.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def end_offsets(bootstrap, topic, partitions):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap})
    try:
        return {p: o for (_, p), o in c.end_offsets([(topic, p) for p in range(partitions)]).items()}
    finally:
        c.close()


def batches_with_rows(q):
    return [p for p in q.recentProgress if p["numInputRows"]]


def source_end(progress):
    end = progress["sources"][0]["endOffset"]
    return json.loads(end) if isinstance(end, str) else end


def test_save_modes_shared_options_and_sink_columns(spark, bootstrap, make_topic):
    from pyspark.errors import AnalysisException
    topic = make_topic()
    # One option dict for reading and writing, as Spark jobs share them: the sink ignores the
    # consumer's kafka.group.id and the source the producer's kafka.linger.ms (Kafka warns).
    shared = {"kafka.bootstrap.servers": bootstrap, "kafka.group.id": f"acl-{topic}",
              "kafka.linger.ms": "5", "kafka.isolation.level": "read_committed"}
    df = spark.createDataFrame([("k", "v")], "key string, value string")

    def write(frame, mode=None):
        w = frame.write.format("gregor").options(**shared).option("topic", topic)
        return (w if mode is None else w.mode(mode)).save()

    # Spark refuses its default mode (ErrorIfExists) for every Python data source before the
    # source is asked: a documented difference from format("kafka").
    with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        write(df)
    # Kafka's sink refuses overwrite; it must not append silently
    with pytest.raises(Exception, match="save mode 'overwrite' is not allowed"):
        write(df, "overwrite")
    assert end_offsets(bootstrap, topic, 1) == {0: 0}
    write(df, "append")
    with pytest.raises(Exception, match="needs a 'value' column"):
        write(spark.createDataFrame([("v",)], "Value string"), "append")  # names are case-sensitive
    back = spark.read.format("gregor").options(**shared).option("subscribe", topic).load().collect()
    assert [(r.key, r.value) for r in back] == [(b"k", b"v")]


def test_reads_as_spark_reads(spark, bootstrap, make_topic):
    uid = uuid.uuid4().hex[:8]
    hit, miss = make_topic(name=f"x-old-events-{uid}-2"), make_topic(name=f"x-other-{uid}")
    produce(bootstrap, hit, [(0, b"a%d" % i) for i in range(25)],
            headers_for=lambda v: [("h", v)] if int(v[1:]) % 2 else None)
    produce(bootstrap, miss, [(0, b"b")])

    def read():
        return spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)

    # subscribePattern is a Java regex searched in the name; stream-only options only warn
    df = (read().option("subscribePattern", f"old-events-{uid}").option("includeHeaders", "true")
          .option("maxOffsetsPerTrigger", "5").option("maxRecordsPerPartition", "10").load())
    assert df.rdd.getNumPartitions() == 3                 # 25 records, at most 10 per task
    rows = df.orderBy("offset").collect()
    assert [r.value for r in rows] == [b"a%d" % i for i in range(25)]
    # a record without headers has null headers, as in Spark
    assert [r.headers is None for r in rows] == [i % 2 == 0 for i in range(25)]
    assert [(h.key, h.value) for h in rows[1].headers] == [("h", b"a1")]

    # option errors fail load(), before any action, for batch and streaming reads
    with pytest.raises(Exception, match="subscribe.*subscribePattern.*assign"):
        read().load()
    with pytest.raises(Exception, match="'startingOffsets' is not valid JSON"):
        (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", hit).option("startingOffsets", "{oops").load())
    # a user-specified schema is refused (the columns are fixed)
    with pytest.raises(Exception, match="fixed schema"):
        read().schema("value string").option("subscribe", hit).load().collect()

    # fetchOffset.numRetries / retryIntervalMs: a topic created while the read plans is found
    late = f"late-{uid}"
    creator = threading.Timer(1.0, lambda: make_topic(name=late))
    creator.start()
    try:
        got = (read().option("subscribe", late).option("fetchOffset.numRetries", "40")
               .option("fetchOffset.retryIntervalMs", "100").load().count())
    finally:
        creator.join()
    assert got == 0


def test_max_offsets_gives_small_partitions_rows_and_added_partitions_are_checked(
        spark, bootstrap, make_topic, tmp_path):
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, [(0, b"%d" % i) for i in range(40)] + [(1, b"x"), (1, b"y")])
    ck = str(tmp_path / "ck")

    def run():
        from pyspark.errors import StreamingQueryException
        q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "10").load().select("value")
             .writeStream.format("noop").option("checkpointLocation", ck)
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        except StreamingQueryException:
            pass  # looked at through q.exception()
        return q

    from gregor.spark.metrics import OffsetsBehindLatestListener, offsets_behind_latest
    listener = OffsetsBehindLatestListener()
    spark.streams.addListener(listener)
    try:
        q = run()
        assert q.exception() is None
        wait_for(lambda: listener.latest.get(str(q.id), {}).get(0, {}).get("maxOffsetsBehindLatest") == "0",
                 what="the listener to see the last batch")
    finally:
        spark.streams.removeListener(listener)
    first = batches_with_rows(q)[0]
    # backlogs 40 and 2: Spark's shares are 9.5 -> 9 and 0.5 -> 1 (never 0 for a partition
    # with records), so the small partition is not held back behind the big one
    assert source_end(first) == {topic: {"0": 9, "1": 1}}
    # Spark's source metrics, from the offsets the progress carries: 40-9 and 2-1 behind
    assert offsets_behind_latest(first) == {0: {"minOffsetsBehindLatest": "1",
                                                "maxOffsetsBehindLatest": "31",
                                                "avgOffsetsBehindLatest": "16.0"}}

    # A partition added later whose first offset is not 0 is data loss, as in Spark
    make_topic.admin.create_partitions({topic: 3})
    produce(bootstrap, topic, [(2, b"new-%d" % i) for i in range(5)])
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, 2): 2})
    finally:
        admin.close()
    q = run()
    assert q.exception() is not None
    assert "was added with its first record at offset 2 instead of 0" in str(q.exception())


def test_min_offsets_per_trigger_alone_waits_for_enough_records(spark, bootstrap, make_topic,
                                                                tmp_path):
    topic = make_topic()
    produce(bootstrap, topic, [(0, b"%d" % i) for i in range(5)])
    q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("minOffsetsPerTrigger", "10").option("maxTriggerDelay", "1h").load()
         .select("value").writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="0 seconds")
         .start())
    try:
        wait_for(lambda: batches_with_rows(q), what="the first batch")  # the first never waits
        produce(bootstrap, topic, [(0, b"%d" % i) for i in range(5, 8)])
        # 3 records < 10: triggers keep coming, no batch may run for them
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert len(batches_with_rows(q)) == 1, "a batch ran below minOffsetsPerTrigger"
            assert q.exception() is None
            time.sleep(0.1)
        produce(bootstrap, topic, [(0, b"%d" % i) for i in range(8, 15)])
        wait_for(lambda: len(batches_with_rows(q)) == 2, what="the batch of 10")
    finally:
        q.stop()
    assert [p["numInputRows"] for p in batches_with_rows(q)] == [5, 10]


def test_starting_latest_on_a_live_topic_survives_restarts(spark, bootstrap, make_topic, tmp_path):
    """The streaming default startingOffsets=latest while a producer writes: several batches,
    stop, restart from the checkpoint (twice): every record from the query's start on is read
    once, none twice, none lost; includeHeaders in a stream gives null for no headers."""
    from gregor.client.producer import Producer
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, [(p, b"old") for p in (0, 1) for _ in range(20)])
    stop = threading.Event()
    sent = []

    def keep_producing():
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        i = 0
        while not stop.is_set():
            p.send(topic, value=b"%d" % i, partition=i % 2,
                   headers=[("seq", b"%d" % i)] if i % 3 == 0 else None)
            sent.append(i)
            i += 1
            if i % 20 == 0:
                p.flush()
                time.sleep(0.01)
        p.flush()
        p.close()

    writer = threading.Thread(target=keep_producing, daemon=True)
    writer.start()
    wait_for(lambda: len(sent) > 200, what="the producer")
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")

    def start(**trigger):
        return (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("includeHeaders", "true").load()
                .selectExpr("partition", "offset", "cast(value as string) as value", "headers")
                .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .trigger(**trigger).start())

    try:
        before = end_offsets(bootstrap, topic, 2)
        q = start(processingTime="0 seconds")
        wait_for(lambda: len(batches_with_rows(q)) >= 3 or q.exception(), what="three batches")
        q.stop()
        assert q.exception() is None, q.exception()
        # batch 0 holds still where `latest` was resolved: the records start right there
        batch0 = q.recentProgress[0]
        assert batch0["batchId"] == 0 and batch0["numInputRows"] == 0
        initial = {int(p): o for p, o in source_end(batch0)[topic].items()}
        q = start(processingTime="0 seconds")
        wait_for(lambda: len(batches_with_rows(q)) >= 2 or q.exception(), what="two more batches")
        q.stop()
        assert q.exception() is None, q.exception()
    finally:
        stop.set()
        writer.join(30)
    q = start(availableNow=True)
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()
    ends = end_offsets(bootstrap, topic, 2)
    rows = spark.read.parquet(out).collect()
    for part in (0, 1):
        offsets = sorted(r.offset for r in rows if r.partition == part)
        assert len(offsets) == len(set(offsets)), f"partition {part}: a record was read twice"
        first = offsets[0]
        assert before[part] <= first == initial[part], "the read did not start where it began"
        assert offsets == list(range(first, ends[part])), f"partition {part}: records lost"
    assert all(r.value != "old" for r in rows)
    for r in rows:
        i = int(r.value)
        assert (r.headers is None) == (i % 3 != 0)
    shutil.rmtree(Path(out), ignore_errors=True)


def test_update_mode_into_a_topic_exactly_once(spark, bootstrap, make_topic, tmp_path):
    """outputMode("update"), the usual way to stream an aggregation into Kafka: the Python data
    source API cannot take it (Spark refuses it before gregor is asked), gregor.spark.to_topic
    writes it through foreachBatch with the sink's options and exactly-once delivery, also
    when Spark replays a micro-batch."""
    from pyspark.errors import StreamingQueryException

    from gregor.spark import to_topic
    src, dst = make_topic(partitions=2), make_topic()
    words = [b"a", b"b", b"a", b"c", b"a", b"b"] * 10
    produce(bootstrap, src, [(i % 2, w) for i, w in enumerate(words)])
    ck = str(tmp_path / "ck")

    def counts():
        return (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", src).option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", "20").load()
                .groupBy("value").count()
                .selectExpr("value as key", "cast(count as string) as value"))

    q = (counts().writeStream.outputMode("update").format("gregor")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", str(tmp_path / "refused")).start())
    with pytest.raises(StreamingQueryException, match="(?i)update"):
        q.awaitTermination(60)

    def run():
        q = (counts().writeStream.outputMode("update")
             .foreachBatch(to_topic({"kafka.bootstrap.servers": bootstrap, "topic": dst,
                                     "deliveryGuarantee": "exactly-once"}))
             .option("checkpointLocation", ck).trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert q.exception() is None, q.exception()
        return len(batches_with_rows(q))

    assert run() == 3                      # 60 records, at most 20 (+1 per partition) a batch

    def latest_counts(isolation):
        rows = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", dst).option("kafka.isolation.level", isolation).load()
                .orderBy("offset").collect())
        last = {}
        for r in rows:
            last[r.key] = int(r.value)
        return last, len(rows)

    final, written = latest_counts("read_committed")
    assert final == {b"a": 30, b"b": 20, b"c": 10}
    # Spark replays the last micro-batch (its commit was lost): nothing is written twice
    commits = Path(ck) / "commits"
    last = max(commits.iterdir(), key=lambda f: int(f.name) if f.name.isdigit() else -1)
    last.unlink()
    for crc in commits.glob(f".{last.name}.crc"):
        crc.unlink()
    assert run() == 1, "the restart did not replay the batch"
    assert latest_counts("read_uncommitted") == (final, written)
