"""format("gregor") against a real gregor broker: batch round trip, streaming resume, admission
control, data loss both ways, option errors as Spark reports them."""
from __future__ import annotations

import json
import re
import time

import pytest

pytestmark = [pytest.mark.spark,
              pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]


def produce(bootstrap, topic, records):
    """records: (partition, key, value) triples, sent in order and flushed."""
    from gregor.client.producer import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    try:
        futures = [p.send(topic, value=v, key=k, partition=part) for part, k, v in records]
        p.flush()
        for f in futures:
            f.result()
    finally:
        p.close()


def read(spark, bootstrap, topic, **options):
    return (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).options(**options).load())


def test_batch_round_trip_keeps_keys_values_headers_partitions_offsets(spark, bootstrap, make_topic):
    from pyspark.sql import Row
    topic = make_topic(partitions=3)
    rows = [Row(key=f"k{i}".encode() if i % 4 else None, value=f"value-{i}".encode() * (i % 3 + 1),
                partition=i % 3,
                headers=[Row(key="h", value=str(i).encode()), Row(key="n", value=None)] if i % 2 else [])
            for i in range(60)]
    df = spark.createDataFrame(rows, "key binary, value binary, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    before_ms = int(time.time() * 1000) - 1
    (df.coalesce(1).write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).mode("append").save())
    after_ms = int(time.time() * 1000) + 1

    back = read(spark, bootstrap, topic, includeHeaders="true").orderBy("partition", "offset").collect()
    assert len(back) == len(rows)
    for part in range(3):
        sent = [r for r in rows if r.partition == part]
        got = [r for r in back if r.partition == part]
        assert [r.offset for r in got] == list(range(len(sent)))  # written in DataFrame order
        assert [(r.key, r.value) for r in got] == [(s.key, s.value) for s in sent]
        # a record without headers reads back with null headers, as in Spark's Kafka source
        assert [None if r.headers is None else [(h.key, h.value) for h in r.headers] for r in got] == \
               [[(h.key, h.value) for h in s.headers] or None for s in sent]
    assert {r.topic for r in back} == {topic}
    assert {r.timestampType for r in back} == {0}  # CreateTime
    stamps = [int(r.timestamp.timestamp() * 1000) for r in back]
    assert all(before_ms <= ts <= after_ms for ts in stamps)

    # A second read returns the very same records, timestamps included; ranges select exactly.
    again = read(spark, bootstrap, topic, includeHeaders="true").orderBy("partition", "offset").collect()
    assert again == back
    sub = read(spark, bootstrap, topic, startingOffsets=json.dumps({topic: {"0": 5, "1": -2, "2": -2}}),
               endingOffsets=json.dumps({topic: {"0": 8, "1": 2, "2": -1}}), minPartitions="4")
    got = sorted((r.partition, r.offset) for r in sub.collect())
    assert got == [(0, 5), (0, 6), (0, 7), (1, 0), (1, 1)] + [(2, o) for o in range(20)]


def test_sink_takes_string_columns_and_a_topic_column(spark, bootstrap, make_topic):
    a, b = make_topic(), make_topic()
    df = spark.createDataFrame([(a, "k1", "one"), (b, None, "two"), (a, "k3", "three")],
                               "topic string, key string, value string")
    df.coalesce(1).write.format("gregor").option("kafka.bootstrap.servers", bootstrap).mode("append").save()
    got_a = [(r.key, r.value) for r in read(spark, bootstrap, a).orderBy("offset").collect()]
    got_b = [(r.key, r.value) for r in read(spark, bootstrap, b).collect()]
    assert got_a == [(b"k1", b"one"), (b"k3", b"three")] and got_b == [(None, b"two")]


def _stream(spark, bootstrap, topic, **options):
    return (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").options(**options).load())


def _end_offsets(query):
    return [json.loads(p["sources"][0]["endOffset"]) if isinstance(p["sources"][0]["endOffset"], str)
            else p["sources"][0]["endOffset"] for p in query.recentProgress if p["numInputRows"]]


def test_max_offsets_per_trigger_splits_in_proportion_to_backlog(spark, bootstrap, make_topic, tmp_path):
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, [(0, None, b"a%d" % i) for i in range(30)] + [(1, None, b"b%d" % i) for i in range(10)])
    q = (_stream(spark, bootstrap, topic, maxOffsetsPerTrigger="8").selectExpr("partition", "offset")
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    # backlogs 30:10 -> shares 6:2 of every 8, until both partitions are drained
    assert _end_offsets(q) == [{topic: {"0": 6 * k, "1": 2 * k}} for k in range(1, 6)]
    assert spark.read.parquet(str(tmp_path / "out")).count() == 40


def test_streaming_resume_from_checkpoint_reads_every_record_once(spark, bootstrap, make_topic, tmp_path):
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, [(i % 2, None, b"first-%d" % i) for i in range(40)])
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")

    def start(trigger):
        return (_stream(spark, bootstrap, topic, maxOffsetsPerTrigger="10")
                .selectExpr("partition", "offset", "cast(value as string) as value")
                .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .trigger(**trigger).start())

    q = start({"processingTime": "0 seconds"})
    deadline = time.monotonic() + 120
    while not [p for p in q.recentProgress if p["numInputRows"]] and time.monotonic() < deadline:
        time.sleep(0.1)
    q.stop()  # mid-way: at most a few of the four micro-batches have run
    assert q.exception() is None
    first_run = spark.read.parquet(out).count()
    assert 0 < first_run <= 40

    produce(bootstrap, topic, [(i % 2, None, b"second-%d" % i) for i in range(25)])
    q = start({"availableNow": True})
    q.awaitTermination(120)
    assert q.exception() is None
    assert all(p["numInputRows"] <= 10 for p in q.recentProgress)
    rows = spark.read.parquet(out).collect()
    keys = [(r.partition, r.offset) for r in rows]
    assert len(keys) == len(set(keys)) == 65  # nothing twice, nothing missing
    assert sorted(r.value for r in rows) == sorted([f"first-{i}" for i in range(40)]
                                                   + [f"second-{i}" for i in range(25)])


def test_stream_to_stream_copy_through_the_streaming_sink(spark, bootstrap, make_topic, tmp_path):
    src, dst = make_topic(partitions=2), make_topic()
    produce(bootstrap, src, [(i % 2, b"k%d" % i, b"v%d" % i) for i in range(30)])
    q = (_stream(spark, bootstrap, src, maxOffsetsPerTrigger="12").select("key", "value")
         .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    got = sorted((r.key, r.value) for r in read(spark, bootstrap, dst).collect())
    assert got == sorted((b"k%d" % i, b"v%d" % i) for i in range(30))


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_recreated_topic_is_data_loss(spark, bootstrap, make_topic, tmp_path, fail_on_data_loss):
    from pyspark.errors import StreamingQueryException
    topic = make_topic()
    produce(bootstrap, topic, [(0, None, b"old-%d" % i) for i in range(10)])
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")

    def run():
        q = (_stream(spark, bootstrap, topic, failOnDataLoss=str(fail_on_data_loss).lower())
             .selectExpr("offset", "cast(value as string) as value")
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        except StreamingQueryException:
            pass  # checked below through q.exception()
        return q

    assert run().exception() is None
    # The topic goes away and comes back with fewer records: offsets 3..9 the query passed are gone.
    make_topic.admin.delete_topics([topic])
    deadline = time.monotonic() + 30
    while topic in make_topic.admin.list_topics() and time.monotonic() < deadline:
        time.sleep(0.1)
    make_topic(name=topic)
    produce(bootstrap, topic, [(0, None, b"new-%d" % i) for i in range(3)])
    q = run()
    if fail_on_data_loss:
        assert q.exception() is not None
        message = str(q.exception())
        assert "were lost" in message and "failOnDataLoss=false" in message
    else:
        assert q.exception() is None
        values = sorted(r.value for r in spark.read.parquet(out).collect())
        assert values == sorted([f"old-{i}" for i in range(10)] + [f"new-{i}" for i in range(3)])


def test_option_errors_reach_the_user(spark, bootstrap, make_topic):
    def base():  # a DataFrameReader keeps the options set on it: a fresh one each time
        return spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)

    with pytest.raises(Exception, match="subscribe.*subscribePattern.*assign"):
        base().load().collect()
    with pytest.raises(Exception, match="'startingOffsets' is not valid JSON"):
        base().option("subscribe", "x").option("startingOffsets", "{oops").load().collect()
    with pytest.raises(Exception, match="needs a 'value' column"):
        (spark.range(3).write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", "x").mode("append").save())
    missing = f"missing-{time.monotonic_ns()}"
    with pytest.raises(Exception, match="no partitions found"):
        base().option("subscribe", missing).option("fetchOffset.retryIntervalMs", "10").load().collect()


def test_timestamps_pattern_and_assign_select_records(spark, bootstrap, make_topic):
    from gregor.client.producer import Producer
    topic = make_topic(partitions=2)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    try:
        futures = [p.send(topic, value=b"v%d" % i, partition=i % 2, timestamp_ms=1_000_000 + 1000 * i)
                   for i in range(20)]
        p.flush()
        for f in futures:
            f.result()
    finally:
        p.close()
    # partition 0 holds i = 0, 2, ..., 18 at offsets 0..9; partition 1 holds the odd i
    window = read(spark, bootstrap, topic, startingTimestamp="1005000", endingTimestamp="1012000")
    assert sorted(r.value for r in window.collect()) == sorted(b"v%d" % i for i in range(5, 12))
    by_partition = read(spark, bootstrap, topic,
                        startingOffsetsByTimestamp=json.dumps({topic: {"0": 1_016_000, "1": 1_000_000}}))
    assert sorted(r.value for r in by_partition.collect()) == sorted(
        [b"v16", b"v18"] + [b"v%d" % i for i in range(1, 20, 2)])
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        read(spark, bootstrap, topic, startingTimestamp="9999999999999").collect()
    assert read(spark, bootstrap, topic, startingTimestamp="9999999999999",
                startingOffsetsByTimestampStrategy="latest").count() == 0
    pattern = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribePattern", re.escape(topic) + "|no-such-topic-.*")
               .load())
    assert pattern.count() == 20
    assigned = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                .option("assign", json.dumps({topic: [1]})).load())
    assert {r.partition for r in assigned.collect()} == {1} and assigned.count() == 10


def test_a_failed_send_fails_the_write_with_its_cause(spark, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    df = spark.createDataFrame([("v", 7)], "value string, partition int")
    with pytest.raises(Exception, match=f"partition 7 of topic '{topic}'"):
        (df.write.format("gregor").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
         .option("kafka.max.block.ms", "2000").mode("append").save())


def _stored_batches(bootstrap, topic):
    """The record batches stored in partition 0, fetched as raw bytes."""
    from gregor.protocol.records.batch import decode_batches
    from tests.broker.handler_harness import fetch_body, fresp
    from tests.support.wire import WireClient
    port = int(bootstrap.rsplit(":", 1)[1])
    with WireClient(port) as c:
        f = fresp(c.request("Fetch", 11, fetch_body(topic, 0, max_wait_ms=500)))
    assert f["error_code"] == 0, f
    return decode_batches(f["records"])


def _stored_codecs(bootstrap, topic):
    """Codec ids of the record batches stored in partition 0."""
    return {b.compression for b in _stored_batches(bootstrap, topic)}


def test_sink_with_acks_1_writes_without_idempotence_as_the_kafka_connector(spark, bootstrap,
                                                                          make_topic):
    """kafka.acks=1 turns the producer's default idempotence off quietly (Kafka 3.x's rule,
    what Spark's connector does), rather than failing every task."""
    df = spark.createDataFrame([(b"k%d" % i, b"value %d" % i) for i in range(100)],
                               "key binary, value binary")
    default, acks1 = make_topic(), make_topic()
    for topic, extra in ((default, {}), (acks1, {"kafka.acks": "1"})):
        (df.coalesce(1).write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .options(**extra).option("topic", topic).mode("append").save())
        back = read(spark, bootstrap, topic).orderBy("offset").collect()
        assert [(r.key, r.value) for r in back] == [(b"k%d" % i, b"value %d" % i)
                                                    for i in range(100)]
    assert all(b.producer_id >= 0 for b in _stored_batches(bootstrap, default))   # idempotent
    assert all(b.producer_id == -1 for b in _stored_batches(bootstrap, acks1))


def test_sink_compresses_with_lz4_unless_told_otherwise(spark, bootstrap, make_topic):
    df = spark.createDataFrame([(b"k%d" % i, b"value %d" % i) for i in range(200)], "key binary, value binary")
    default, plain = make_topic(), make_topic()
    (df.coalesce(1).write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", default).mode("append").save())
    (df.coalesce(1).write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
     .option("kafka.compression.type", "none").option("topic", plain).mode("append").save())
    assert _stored_codecs(bootstrap, default) == {3}     # lz4
    assert _stored_codecs(bootstrap, plain) == {0}
    for topic in (default, plain):
        back = read(spark, bootstrap, topic).orderBy("offset").collect()
        assert [(r.key, r.value) for r in back] == [(b"k%d" % i, b"value %d" % i) for i in range(200)]
