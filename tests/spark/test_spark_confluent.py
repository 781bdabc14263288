"""valueFormat / keyFormat with schemaRegistryUrl (gregor's registry on the shared broker):
typed struct columns on read (older writers resolved into the latest schema, fields in its
order), a clear error naming the offset of an undecodable record with the session still
usable, PERMISSIVE nulls, the Avro sink, and from_confluent / to_confluent."""
from __future__ import annotations

import json

import pytest

from gregor.client.producer import Producer
from gregor.schema_registry import SchemaRegistryClient
from gregor.serde import AvroDeserializer, AvroSerializer

pytestmark = pytest.mark.spark

V1 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "qty", "type": "int", "default": 1}, {"name": "id", "type": "long"},
    {"name": "item", "type": "string"}, {"name": "note", "type": ["null", "string"],
                                         "default": None}]})


@pytest.fixture(scope="module")
def registry_url(shared_broker):
    from gregor.registry.server import RegistryThread
    with RegistryThread({"bootstrap.servers": shared_broker.bootstrap}) as reg:
        yield reg.url


def produce(bootstrap, topic, values):
    p = Producer({"bootstrap.servers": bootstrap})
    try:
        for v in values:
            p.send(topic, v)
        p.flush(60)
    finally:
        p.close()


def read(spark, bootstrap, topic, url, **extra):
    r = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("valueFormat", "avro")
         .option("schemaRegistryUrl", url))
    for k, v in extra.items():
        r = r.option(k, v)
    return r.load()


def test_avro_values_read_as_the_latest_schema(spark, bootstrap, make_topic, registry_url):
    topic = make_topic()
    reg = SchemaRegistryClient({"url": registry_url})
    old = AvroSerializer(reg, V1)
    new = AvroSerializer(reg, V2)
    produce(bootstrap, topic, [old.serialize(topic, {"id": 1, "item": "a"}),
                               new.serialize(topic, {"qty": 5, "id": 2, "item": "b",
                                                     "note": "x"}), None])
    df = read(spark, bootstrap, topic, registry_url)
    assert df.schema["value"].dataType.simpleString() == \
        "struct<qty:int,id:bigint,item:string,note:string>"
    rows = [r.value.asDict() if r.value else None
            for r in df.orderBy("offset").select("value").collect()]
    assert rows == [{"qty": 1, "id": 1, "item": "a", "note": None},
                    {"qty": 5, "id": 2, "item": "b", "note": "x"}, None]


def test_undecodable_record_fails_with_its_offset_and_permissive_nulls(
        spark, bootstrap, make_topic, registry_url):
    topic = make_topic()
    reg = SchemaRegistryClient({"url": registry_url})
    ser = AvroSerializer(reg, V1)
    produce(bootstrap, topic, [ser.serialize(topic, {"id": 1, "item": "a"}), b"not framed",
                               b"\x00\x00\x0f\x42\x40rest"])
    with pytest.raises(Exception, match=rf"{topic}-0 offset 1.*no magic byte"):
        read(spark, bootstrap, topic, registry_url).collect()
    # the session (and its Python workers) still serve queries
    got = read(spark, bootstrap, topic, registry_url, mode="PERMISSIVE") \
        .orderBy("offset").select("value").collect()
    assert [r.value.asDict() if r.value else None for r in got] == [
        {"id": 1, "item": "a"}, None, None]
    with pytest.raises(Exception, match=rf"{topic}-0 offset 2.*schema id 1000000"):
        read(spark, bootstrap, topic, registry_url, startingOffsets=json.dumps(
            {topic: {"0": 2}})).collect()


def test_avro_sink_registers_the_struct_schema(spark, bootstrap, make_topic, registry_url):
    from pyspark.sql.functions import col, struct
    topic = make_topic()
    df = spark.createDataFrame([(1, "a", 2.5), (2, "b", None)], "id long, item string, w double")
    (df.select(struct(col("id"), col("item"), col("w")).alias("value"))
       .write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
       .option("topic", topic).option("valueFormat", "avro")
       .option("schemaRegistryUrl", registry_url).mode("append").save())
    reg = SchemaRegistryClient({"url": registry_url})
    latest = reg.get_latest_version(f"{topic}-value")
    assert json.loads(latest.schema.schema_str)["name"] == "topLevelRecord"
    back = read(spark, bootstrap, topic, registry_url).select("value.*")
    assert sorted(tuple(r) for r in back.collect()) == [(1, "a", 2.5), (2, "b", None)]
    # what a consumer with a deserializer reads from the same records
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap,
                  "value.deserializer": AvroDeserializer(reg)})
    c.assign([(topic, 0, -2)])
    recs = []
    for _ in range(60):
        recs += c.poll(1.0)
        if len(recs) >= 2:
            break
    c.close()
    assert sorted((r.value for r in recs), key=lambda v: v["id"]) == [
        {"id": 1, "item": "a", "w": 2.5}, {"id": 2, "item": "b", "w": None}]


def test_avro_sink_writes_a_timestamp_field(spark, bootstrap, make_topic, registry_url):
    """A timestamp in the struct becomes Avro's timestamp-micros (an instant) and reads back."""
    import datetime as dt

    from pyspark.sql.functions import col, struct
    topic = make_topic()
    at = dt.datetime(2013, 1, 1, 10, 15, 30, 250000)
    df = spark.createDataFrame([(1, at)], "id long, at timestamp")
    (df.select(struct(col("id"), col("at")).alias("value"))
       .write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
       .option("topic", topic).option("valueFormat", "avro")
       .option("schemaRegistryUrl", registry_url).mode("append").save())
    reg = SchemaRegistryClient({"url": registry_url})
    fields = json.loads(reg.get_latest_version(f"{topic}-value").schema.schema_str)["fields"]
    at_type = next(f["type"] for f in fields if f["name"] == "at")
    assert "timestamp-micros" in json.dumps(at_type)
    back = read(spark, bootstrap, topic, registry_url).select("value.*").collect()
    assert [tuple(r) for r in back] == [(1, at)]


def test_from_and_to_confluent_on_binary_columns(spark, registry_url, request):
    from pyspark.sql.functions import col, struct
    from gregor.spark import from_confluent, to_confluent
    subject = f"{request.node.name}-value"
    df = spark.createDataFrame([(1, "x"), (2, "y")], "id long, name string")
    framed = df.select(to_confluent(struct("id", "name"), registry_url, subject).alias("v"))
    rows = framed.collect()             # registers the subject (from the tasks)
    assert all(r.v[:1] == b"\x00" for r in rows)
    binary = spark.createDataFrame(rows, "v binary")
    back = binary.select(from_confluent(col("v"), registry_url, subject).alias("s"))
    assert sorted(tuple(r.s) for r in back.collect()) == [(1, "x"), (2, "y")]
