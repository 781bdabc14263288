"""Confluent-framed Avro decode, side by side on the same records: gregor's column decoder
(poll_batches(arrow=True) with an AvroDeserializer) against confluent-kafka's AvroDeserializer
called per record, as a confluent-kafka consumer loop does.

    .venv/bin/python benchmarks/bench_serde.py [--records 200000] [--rounds 3]

The records (a 10-field record: longs, ints, doubles, strings, a boolean, a nullable string,
a timestamp) are framed once by confluent-kafka's AvroSerializer on its mock registry. Timed,
best of --rounds: (1) decode only: AvroArrowDecoder.decode of the Arrow binary column vs
AvroDeserializer(value, ctx) per record over the same bytes; (2) end to end from a gregor
broker: poll_batches(arrow=True) with the deserializer vs without it (the binary read). Prints
records/s and the ratios. The machine is shared and noisy: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from gregor.client.consumer import Consumer  # noqa: E402
from gregor.client.producer import Producer  # noqa: E402
from gregor.serde import AvroDeserializer as GregorAvroDeserializer  # noqa: E402
from gregor.serde import avro_arrow  # noqa: E402
from gregor.testing import Broker  # noqa: E402

SCHEMA = json.dumps({"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "int"},
    {"name": "amount", "type": "double"}, {"name": "fee", "type": "double"},
    {"name": "city", "type": "string"}, {"name": "device", "type": "string"},
    {"name": "ok", "type": "boolean"}, {"name": "note", "type": ["null", "string"]},
    {"name": "count", "type": "int"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]})
TOPIC = "events"


def records(n):
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Cork"]
    for i in range(n):
        yield {"id": i, "user": i % 1000, "amount": i * 0.25, "fee": 0.5, "city": cities[i % 5],
               "device": f"dev-{i % 97}", "ok": i % 2 == 0,
               "note": None if i % 3 else f"n{i}", "count": i % 10, "at": 1_700_000_000_000 + i}


def best(fn, rounds):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def read(bootstrap, n, deserializer):
    conf = {"bootstrap.servers": bootstrap}
    if deserializer is not None:
        conf["value.deserializer"] = deserializer
    c = Consumer(conf)
    c.assign([(TOPIC, 0, -2)])
    got = 0
    while got < n:
        for ch in c.poll_batches(1.0, arrow=True):
            got += len(ch)
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    n = args.records
    registry = SchemaRegistryClient.new_client({"url": "mock://bench"})
    ser = AvroSerializer(registry, SCHEMA)
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    framed = [ser(r, ctx) for r in records(n)]
    values = pa.array(framed, pa.binary())
    print(f"{n} records of a 10-field Avro record, {values.nbytes / n:.0f} bytes each; "
          f"compiled column decoder: {avro_arrow._compiled is not None}")

    ck = AvroDeserializer(registry)
    t_ck = best(lambda: [ck(v, ctx) for v in framed], args.rounds)
    import io

    import fastavro
    parsed = fastavro.parse_schema(json.loads(SCHEMA))
    reader = fastavro.schemaless_reader
    t_fa = best(lambda: [reader(io.BytesIO(v[5:]), parsed, None) for v in framed], args.rounds)
    dec = avro_arrow.AvroArrowDecoder(registry, subject=f"{TOPIC}-value")
    t_ours = best(lambda: dec.decode(values), args.rounds)
    print(f"decode only   confluent-kafka AvroDeserializer per record {n / t_ck:>12,.0f} rec/s")
    print(f"decode only   fastavro.schemaless_reader per record       {n / t_fa:>12,.0f} rec/s")
    print(f"decode only   gregor AvroArrowDecoder (Arrow columns)     {n / t_ours:>12,.0f} rec/s"
          f"   ratio {t_ck / t_ours:.1f}x confluent-kafka, {t_fa / t_ours:.1f}x fastavro")

    with Broker() as broker:
        broker.create_topic(TOPIC)
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        p.send_batch(TOPIC, values).result(120)
        p.close()
        bs = broker.bootstrap_servers
        t_bin = best(lambda: read(bs, n, None), args.rounds)
        t_avro = best(lambda: read(bs, n, GregorAvroDeserializer(registry)), args.rounds)
        t_ck_e2e = t_bin + t_ck
        print(f"end to end    poll_batches(arrow=True), binary values     {n / t_bin:>12,.0f} rec/s")
        print(f"end to end    poll_batches(arrow=True), Avro struct       {n / t_avro:>12,.0f} rec/s"
              f"   {t_bin / t_avro:.2f}x the binary read")
        print(f"end to end    binary read + confluent-kafka per record    "
              f"{n / t_ck_e2e:>12,.0f} rec/s   gregor Avro is {t_ck_e2e / t_avro:.1f}x")


if __name__ == "__main__":
    main()
