"""Record batch speed: gregor's BatchBuilder, gregor's bulk path and kafka-python's
DefaultRecordBatchBuilder side by side, then decoding and validation, then codecs.

    .venv/bin/python benchmarks/bench_records.py [--records 200000] [--key 10] [--value 100]

Each case builds batches of --batch-bytes (default 16 KiB, Kafka's batch.size, and 1 MiB)
from the same records: 10-byte keys, 100-byte values, one timestamp per millisecond. Every
case runs --repeat times; the best run counts (this machine is shared and noisy).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gregor.protocol.compression import CODEC_NAMES, compress, decompress  # noqa: E402
from gregor.protocol.records.batch import decode_batches, validate_batch  # noqa: E402
from gregor.protocol.records.builder import BatchBuilder, build_batch_bulk  # noqa: E402

try:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords
except ImportError:     # kafka-python is a test dependency
    DefaultRecordBatchBuilder = MemoryRecords = None


def best_of(repeat, fn):
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def gregor_builder(timestamps, keys, values, batch_bytes):
    out = []
    b = BatchBuilder(max_bytes=batch_bytes)
    append = b.append
    for ts, k, v in zip(timestamps, keys, values):
        if not append(ts, k, v):
            out.append(b.build())
            b = BatchBuilder(max_bytes=batch_bytes)
            append = b.append
            append(ts, k, v)
    out.append(b.build())
    return out


def gregor_bulk(timestamps, keys, values, per_batch):
    return [build_batch_bulk(keys[i:i + per_batch], values[i:i + per_batch],
                             timestamps[i:i + per_batch])
            for i in range(0, len(values), per_batch)]


def kafka_python_builder(timestamps, keys, values, batch_bytes):
    out = []

    def new():
        return DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                         producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                         batch_size=batch_bytes)
    b = new()
    offset = 0
    for ts, k, v in zip(timestamps, keys, values):
        if b.append(offset, ts, k, v, []) is None:
            out.append(bytes(b.build()))
            b = new()
            offset = 0
            b.append(offset, ts, k, v, [])
        offset += 1
    out.append(bytes(b.build()))
    return out


def kafka_python_decode(batches):
    n = 0
    for data in batches:
        mr = MemoryRecords(data)
        while (batch := mr.next_batch()) is not None:
            for _ in batch:
                n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--key", type=int, default=10)
    ap.add_argument("--value", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.records
    keys = [os.urandom(args.key) for _ in range(n)]
    values = [os.urandom(args.value) for _ in range(n)]
    t0 = int(time.time() * 1000)
    timestamps = [t0 + i // 1000 for i in range(n)]
    rate = lambda dt: n / dt  # noqa: E731

    print(f"{n} records, {args.key} B keys, {args.value} B values, best of {args.repeat}")
    for batch_bytes in (16 * 1024, 1024 * 1024):
        print(f"\n== build, batches of {batch_bytes // 1024} KiB ==")
        dt_b, built = best_of(args.repeat, lambda: gregor_builder(timestamps, keys, values,
                                                                   batch_bytes))
        per_batch = n // len(built) + 1
        dt_bulk, _ = best_of(args.repeat, lambda: gregor_bulk(timestamps, keys, values,
                                                               per_batch))
        rows = [("gregor BatchBuilder.append+build", rate(dt_b)),
                (f"gregor build_batch_bulk ({per_batch}/batch)", rate(dt_bulk))]
        if DefaultRecordBatchBuilder is not None:
            dt_k, _ = best_of(args.repeat, lambda: kafka_python_builder(timestamps, keys, values,
                                                                         batch_bytes))
            rows.append(("kafka-python DefaultRecordBatchBuilder", rate(dt_k)))
        ref = rows[-1][1]
        for name, r in rows:
            print(f"  {name:44s} {r / 1e6:7.2f} M records/s   x{r / ref:5.2f} vs kafka-python")

        print(f"== decode / validate, batches of {batch_bytes // 1024} KiB ==")
        dt_d, _ = best_of(args.repeat, lambda: [decode_batches(b) for b in built])
        dt_v, _ = best_of(args.repeat, lambda: [validate_batch(b, from_client=True)
                                                for b in built])
        rows = [("gregor decode_batches", rate(dt_d)), ("gregor validate_batch", rate(dt_v))]
        if MemoryRecords is not None:
            dt_kd, _ = best_of(args.repeat, lambda: kafka_python_decode(built))
            rows.append(("kafka-python MemoryRecords iteration", rate(dt_kd)))
        ref = rows[-1][1]
        for name, r in rows:
            print(f"  {name:44s} {r / 1e6:7.2f} M records/s   x{r / ref:5.2f} vs kafka-python")

    print("\n== codecs on one 1 MiB records section (compress / decompress MB/s) ==")
    section = b"".join(v + k for k, v in zip(keys[:8000], values[:8000]))
    section = section[: len(section) // 2] + b"".join(
        b'{"user": %d, "event": "click", "page": "/home"}' % i for i in range(12000))
    section = section[: 1 << 20]
    mb = len(section) / 1e6
    for codec in range(1, 5):
        dt_c, packed = best_of(args.repeat, lambda: compress(codec, section))
        dt_x, _ = best_of(args.repeat, lambda: decompress(codec, packed))
        print(f"  {CODEC_NAMES[codec]:8s} ratio {len(section) / len(packed):5.2f}   "
              f"compress {mb / dt_c:7.0f} MB/s   decompress {mb / dt_x:7.0f} MB/s")


if __name__ == "__main__":
    main()
