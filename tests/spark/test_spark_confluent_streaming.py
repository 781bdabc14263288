"""valueFormat=avro in streaming queries, judged by confluent-kafka's serde: records written
by its AvroSerializer are read by readStream as typed structs, and a streaming write with
valueFormat=avro (at-least-once and the exactly-once sink, with a replayed micro-batch) is
read back by its AvroDeserializer, each record exactly once."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

pytestmark = pytest.mark.spark
TIMEOUT_S = 120

ORDER = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
    {"name": "qty", "type": ["null", "int"], "default": None},
    {"name": "price", "type": "double"}]})


@pytest.fixture(scope="module")
def registry_url(shared_broker):
    from gregor.registry.server import RegistryThread
    with RegistryThread({"bootstrap.servers": shared_broker.bootstrap}) as reg:
        yield reg.url


def ck_registry(url):
    return ck_sr.SchemaRegistryClient({"url": url})


def order(i):
    return {"id": i, "item": f"item-{i}", "qty": None if i % 3 == 0 else i % 7,
            "price": i / 4}


def ck_write(bootstrap, url, topic, n, partitions):
    ser = AvroSerializer(ck_registry(url), ORDER,
                         conf={"subject.name.strategy": ck_sr.topic_subject_name_strategy})
    p = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, ser(order(i), SerializationContext(topic, MessageField.VALUE)),
                  partition=i % partitions)
    assert p.flush(TIMEOUT_S) == 0


def ck_read(bootstrap, url, topic, n, isolation="read_committed"):
    """Every value of the topic, decoded by confluent-kafka's AvroDeserializer; reads until
    the end offsets are reached (so a record written twice would be seen)."""
    de = AvroDeserializer(ck_registry(url))
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"ck-{topic}-{isolation}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "isolation.level": isolation})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                if len(got) >= n:
                    break
                continue
            if m.error():
                continue
            got.append(de(m.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        c.close()
    return got


def stream(spark, bootstrap, url, src, dst, ck_dir, **sink):
    w = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "150")
         .option("valueFormat", "avro").option("schemaRegistryUrl", url).load()
         .selectExpr("value")
         .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", dst).option("valueFormat", "avro").option("schemaRegistryUrl", url)
         .option("checkpointLocation", ck_dir))
    for k, v in sink.items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start()
    q.awaitTermination(TIMEOUT_S)
    assert q.exception() is None, q.exception()
    return sum(p["numInputRows"] for p in q.recentProgress)


def test_read_stream_yields_typed_structs(spark, bootstrap, make_topic, registry_url, tmp_path):
    topic = make_topic(2)
    ck_write(bootstrap, registry_url, topic, 60, 2)
    df = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest")
          .option("valueFormat", "avro").option("schemaRegistryUrl", registry_url).load())
    assert df.schema["value"].dataType.simpleString() == \
        "struct<id:bigint,item:string,qty:int,price:double>"
    name = f"q_{topic.replace('-', '_')}"
    q = (df.select("value.*").writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(TIMEOUT_S)
    assert q.exception() is None, q.exception()
    rows = sorted((r.asDict() for r in spark.table(name).collect()), key=lambda r: r["id"])
    assert rows == [order(i) for i in range(60)]


def test_streaming_avro_write_read_by_confluent(spark, bootstrap, make_topic, registry_url,
                                                tmp_path):
    src, dst = make_topic(2), make_topic(2)
    ck_write(bootstrap, registry_url, src, 300, 2)
    assert stream(spark, bootstrap, registry_url, src, dst, str(tmp_path / "ck")) == 300
    got = ck_read(bootstrap, registry_url, dst, 300, "read_uncommitted")
    assert sorted(got, key=lambda r: r["id"]) == [order(i) for i in range(300)]
    latest = ck_registry(registry_url).get_latest_version(f"{dst}-value")
    assert json.loads(latest.schema.schema_str)["name"] == "topLevelRecord"


def test_streaming_avro_exactly_once_with_a_replayed_batch(spark, bootstrap, make_topic,
                                                           registry_url, tmp_path):
    src, dst = make_topic(2), make_topic(2)
    ck_write(bootstrap, registry_url, src, 400, 2)
    ck_dir = str(tmp_path / "ck")
    eos = {"deliveryGuarantee": "exactly-once"}
    assert stream(spark, bootstrap, registry_url, src, dst, ck_dir, **eos) == 400
    want = [order(i) for i in range(400)]
    assert sorted(ck_read(bootstrap, registry_url, dst, 400), key=lambda r: r["id"]) == want
    # Spark forgets it committed the last micro-batch and replays it: the sink's tasks find
    # their transactions committed and write nothing again.
    commits = Path(ck_dir) / "commits"
    last = max((f for f in commits.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    last.unlink()
    for crc in commits.glob(f".{last.name}.crc"):
        crc.unlink()
    assert stream(spark, bootstrap, registry_url, src, dst, ck_dir, **eos) > 0
    assert sorted(ck_read(bootstrap, registry_url, dst, 400), key=lambda r: r["id"]) == want
    raw = ck_read(bootstrap, registry_url, dst, 400, "read_uncommitted")
    assert len(raw) == 400, "a replayed micro-batch was written again"
