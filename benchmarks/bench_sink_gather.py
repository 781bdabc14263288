"""The Spark sink's keyed rows: sorted into partitions as they arrive vs gathered at send time.

    .venv/bin/python benchmarks/bench_sink_gather.py [--rows 2000000] [--partitions 4]
                                                     [--rounds 4]

What a Spark sink task does with keyed rows, without Spark: Arrow batches of 10,000 rows
(10-byte keys, 100-byte values) are read from an Arrow IPC stream, as a Python worker reads
them from the JVM (fresh buffers each time), and written through the sink's RecordWriter
(gregor/spark/client.py) to a gregor broker in another process, lz4 as the sink's default.
Two ways, taking turns, in one process:
  at send     the batches are concatenated every 32 MiB and send_batch picks each partition's
              rows out of the whole (the general path; what every keyed write did before);
  on arrival  each batch is hashed and its rows copied into per-partition columns while it
              is fresh in cache; each partition's rows are then encoded front to back
              (gregor/spark/partitioned.py; the default for keyed rows now).
Prints the writer process's CPU (main and sender threads) per record, best round of each,
and the ratio; the broker's CPU is left out (the same bytes reach it either way).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gregor.client.admin import AdminClient, NewTopic  # noqa: E402
from gregor.demo.embedded import EmbeddedBroker  # noqa: E402
from gregor.spark.client import RecordWriter  # noqa: E402


def ipc_stream(rows: int) -> bytes:
    keys = pa.array([b"key-%06d" % (i % 10_000) for i in range(rows)], pa.binary())
    values = pa.array([b"%020d" % i + b"x" * 80 for i in range(rows)], pa.binary())
    table = pa.table({"key": keys, "value": values})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        for batch in table.to_batches(max_chunksize=10_000):
            w.write_batch(batch)
    return sink.getvalue()


def write(bootstrap: str, topic: str, stream: bytes, on_arrival: bool) -> float:
    """CPU seconds of this process for one sink task's write (connections already open)."""
    cpu0 = time.process_time()
    w = RecordWriter({"bootstrap.servers": bootstrap}, topic)
    w._keyed_fast_path = w._keyed_fast_path and on_arrival
    for batch in pa.ipc.open_stream(io.BytesIO(stream)):    # copies into fresh buffers
        w.write(batch)
    w.close()
    return time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    stream = ipc_stream(args.rows)
    broker = EmbeddedBroker(Path(tempfile.mkdtemp(prefix="gregor-bench-gather-")) / "broker")
    bootstrap = broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [f"gather-{os.getpid()}-{i}" for i in range(2 * args.rounds + 2)]
        admin.create_topics([NewTopic(t, args.partitions, 1) for t in topics])
        admin.close()
        write(bootstrap, topics.pop(), stream, True)     # warm-up: compile, connect, pool
        write(bootstrap, topics.pop(), stream, False)
        best = {"at send": float("inf"), "on arrival": float("inf")}
        print(f"{args.rows:,} keyed rows of 110 B, {args.partitions} partitions, lz4")
        for r in range(args.rounds):
            for label, on_arrival in (("at send", False), ("on arrival", True)):
                cpu = write(bootstrap, topics.pop(), stream, on_arrival)
                best[label] = min(best[label], cpu)
                print(f"  round {r + 1} {label:<11} {cpu:6.2f} s CPU  "
                      f"{cpu / args.rows * 1e9:6.0f} ns/record")
        a, b = best["at send"], best["on arrival"]
        print(f"best: at send {a / args.rows * 1e9:.0f} ns/record, on arrival "
              f"{b / args.rows * 1e9:.0f} ns/record: {a / b:.2f}x less CPU")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
