"""Confluent-framed Avro encode from Arrow columns, side by side on the same table: gregor's
columnar encoder (gregor/serde/_avro_encode.pyx, what send_batch, the Spark sink and
to_confluent use) against fastavro's schemaless_writer row by row (the path they took before,
still the fallback; its time includes to_pylist, as that path's does) and confluent-kafka's
AvroSerializer called per record on ready Python dicts (for scale).

    .venv/bin/python benchmarks/bench_avro_encode.py [--records 200000] [--rounds 3]

Two tables: `flat`, a 10-field record (longs, ints, doubles, strings, a boolean, a nullable
string, a UTC timestamp), and `nested`, the shapes Spark structs derive to (a nested struct, an
array of strings, a map, a decimal). Each encoder's output is checked to be byte for byte
fastavro's before it is timed. Best of --rounds; prints records/s and the ratios. The machine
is shared and noisy: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from gregor.serde import avro_encode  # noqa: E402
from gregor.serde.avro_arrow import encode_rows_fastavro  # noqa: E402
from gregor.serde.avro_schema import parse_avro  # noqa: E402
from gregor.serde.avro_types import avro_schema  # noqa: E402
from gregor.serde.framing import header  # noqa: E402

UTC = dt.timezone.utc
FLAT = pa.struct([pa.field("id", pa.int64(), False), pa.field("user", pa.int32(), False),
                  pa.field("amount", pa.float64(), False), pa.field("fee", pa.float64(), False),
                  pa.field("city", pa.string(), False), pa.field("device", pa.string(), False),
                  pa.field("ok", pa.bool_(), False), pa.field("note", pa.string()),
                  pa.field("count", pa.int32(), False),
                  pa.field("at", pa.timestamp("ms", tz="UTC"), False)])
NESTED = pa.struct([("id", pa.int64()), ("geo", pa.struct([("lat", pa.float64()),
                                                           ("lon", pa.float64())])),
                    ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int64())),
                    ("price", pa.decimal128(12, 2)), ("name", pa.string())])


def flat(i):
    return {"id": i, "user": i % 1000, "amount": i * 0.25, "fee": 0.5,
            "city": ["Oslo", "Lima", "Pune", "Kyiv", "Cork"][i % 5], "device": f"dev-{i % 97}",
            "ok": i % 2 == 0, "note": None if i % 3 else f"n{i}", "count": i % 10,
            "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i)}


def nested(i):
    return {"id": i, "geo": None if i % 7 == 0 else {"lat": i / 3, "lon": -i / 5},
            "tags": [f"t{j}" for j in range(i % 4)], "attrs": [("a", i), ("b", None)][:i % 3],
            "price": decimal.Decimal(i * 37 - 500).scaleb(-2), "name": f"name-{i}"}


def best(fn, rounds):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run(label, t, make, n, rounds):
    arr = pa.array([make(i) for i in range(n)], t)
    text = json.dumps(avro_schema(t, "topLevelRecord"))
    parsed = parse_avro(text)
    head = header(1)
    ref = encode_rows_fastavro(arr, head, parsed)
    assert avro_encode.encode(arr, head, parsed).equals(ref), "columnar bytes differ"
    reg = SchemaRegistryClient.new_client({"url": "mock://bench"})
    ser = AvroSerializer(reg, text)
    ctx = SerializationContext("bench", MessageField.VALUE)
    pylist = arr.to_pylist(maps_as_pydicts="strict")
    ser(pylist[0], ctx)                                      # registers the schema
    ck_n = min(n, 50_000)
    t_col = best(lambda: avro_encode.encode(arr, head, parsed), rounds)
    t_fa = best(lambda: encode_rows_fastavro(arr, head, parsed), rounds)
    t_ck = best(lambda: [ser(r, ctx) for r in pylist[:ck_n]], rounds) * n / ck_n
    col, fa, ck = n / t_col, n / t_fa, n / t_ck
    print(f"{label}: {n:,} records, {ref.nbytes / n:.0f} bytes each")
    print(f"  columnar encoder:            {col:>12,.0f} records/s")
    print(f"  fastavro row by row:         {fa:>12,.0f} records/s")
    print(f"  confluent-kafka per record:  {ck:>12,.0f} records/s")
    print(f"  ratio {label} columnar/fastavro: {col / fa:.1f}x")
    print(f"  ratio {label} columnar/confluent-kafka: {col / ck:.1f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not avro_encode.available():
        sys.exit("the compiled encoder is not built (or GREGOR_PURE_PYTHON is set)")
    run("flat", FLAT, flat, a.records, a.rounds)
    run("nested", NESTED, nested, a.records, a.rounds)


if __name__ == "__main__":
    main()
