"""Per-micro-batch cost of gregor's streaming sink, side by side with Spark's `noop` sink in
one run, and end-to-end latency of a topic -> topic query.

    python benchmarks/bench_spark_microbatch.py [--batches 20] [--rounds 3] [--rows 1000]

Each round runs the same streaming query three times over a prefilled topic, in small
micro-batches (maxOffsetsPerTrigger=--rows, trigger processingTime 0): into `noop`, into a
Python data source sink that only consumes its input (`pynull`: what any Python sink pays
in PySpark: a Python worker per task fed through Arrow, the driver's per-batch commit call),
and into gregor's sink. It prints ms per micro-batch of each, and the ratio gregor/noop
(target from the Spark issue: <= 1.2x); rounds alternate which sink goes first and the
median of the per-round ratios is the figure (the machine is shared: single runs swing).
Then a topic -> topic query (trigger 0) carries records a producer sends every 20 ms; a
consumer of the output topic prints the produce -> visible latency p50 / p90.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_NULL_SINK = '''
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage


class _Writer(DataSourceStreamArrowWriter):
    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass


class PyNullSink(DataSource):
    @classmethod
    def name(cls):
        return "pynull"

    def streamWriter(self, schema, overwrite):
        return _Writer()
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=20, help="micro-batches per query")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000, help="rows per micro-batch")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--latency-records", type=int, default=200)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="gregor-bench-microbatch-"))
    # The `pynull` sink must be importable by Spark's Python workers.
    (work / "bench_pynull_sink.py").write_text(_NULL_SINK)
    os.environ["PYTHONPATH"] = f"{work}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    sys.path.insert(0, str(work))

    from bench_pynull_sink import PyNullSink

    from gregor.client.admin import AdminClient, NewTopic
    from gregor.client.producer import Producer
    from gregor.demo.embedded import EmbeddedBroker
    from gregor.demo.pipeline import new_session

    broker = EmbeddedBroker(work / "broker")
    bootstrap = broker.start()
    try:
        sinks = ["noop", "pynull", "gregor"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("mb-src", args.partitions, 1), NewTopic("mb-out", args.partitions, 1),
                             NewTopic("lat-src", 1, 1), NewTopic("lat-out", 1, 1)])
        admin.close()
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        pad = b"x" * 80
        for i in range(args.rows * args.batches):
            p.send("mb-src", b"%020d" % i + pad, partition=i % args.partitions)
        p.flush()
        p.close()
        spark = new_session("gregor-bench-microbatch", work=work / "spark")
        spark.dataSource.register(PyNullSink)
        print(f"{args.batches} micro-batches of {args.rows:,} rows per query, {args.partitions} "
              f"partitions, {args.rounds} rounds, broker {bootstrap}")

        def run(sink: str, tag: str) -> float:
            df = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", "mb-src").option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", str(args.rows)).load().select("key", "value"))
            w = df.writeStream.option("checkpointLocation", str(work / f"ck-{tag}"))
            if sink == "gregor":
                w = w.format("gregor").option("kafka.bootstrap.servers", bootstrap).option("topic", "mb-out")
            else:
                w = w.format(sink)
            t0 = time.perf_counter()
            q = w.trigger(processingTime="0 seconds").start()
            while len([x for x in q.recentProgress if x["numInputRows"]]) < args.batches:
                if q.exception() is not None:
                    raise RuntimeError(q.exception())
                time.sleep(0.01)
            dt = time.perf_counter() - t0
            q.stop()
            return dt / args.batches * 1000

        run("noop", "warm-noop")  # session start-up, Python workers, JIT: not measured
        run("gregor", "warm-gregor")
        run("pynull", "warm-pynull")
        results: dict[str, list[float]] = {s: [] for s in sinks}
        ratios, null_ratios = [], []
        for r in range(args.rounds):
            order = sinks[r % len(sinks):] + sinks[:r % len(sinks)]
            got = {s: run(s, f"{s}-{r}") for s in order}
            for s in sinks:
                results[s].append(got[s])
            ratios.append(got["gregor"] / got["noop"])
            null_ratios.append(got["pynull"] / got["noop"])
            print(f"  round {r + 1}: " + ", ".join(f"{s} {got[s]:6.0f} ms/batch" for s in order)
                  + f"; gregor/noop {ratios[-1]:.2f}x")
        for s in sinks:
            print(f"  {s:<7} ms per micro-batch: median {statistics.median(results[s]):6.0f}, "
                  f"best {min(results[s]):6.0f}")
        print(f"micro-batch overhead gregor/noop: median {statistics.median(ratios):.2f}x, best "
              f"{min(ratios):.2f}x (target <= 1.2x); any Python sink (pynull)/noop: median "
              f"{statistics.median(null_ratios):.2f}x")
        latency(spark, bootstrap, work, args.latency_records)
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def latency(spark, bootstrap: str, work: Path, records: int) -> None:
    """Records produced every 20 ms, each carrying its send time; a topic -> topic query at
    trigger 0; a consumer of the output topic notes when each one becomes visible."""
    from gregor.client.consumer import Consumer
    from gregor.client.producer import Producer
    q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", "lat-src").load().select("value")
         .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", "lat-out").option("checkpointLocation", str(work / "ck-latency"))
         .trigger(processingTime="0 seconds").start())
    while not q.recentProgress:        # the query has started and resolved its start offsets
        time.sleep(0.05)
    stop = threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for _ in range(records):
            if stop.is_set():
                break
            p.send("lat-src", b"%.6f" % time.time())
            p.flush()
            time.sleep(0.02)
        p.close()
    t = threading.Thread(target=produce, daemon=True)
    t.start()
    c = Consumer({"bootstrap.servers": bootstrap, "fetch.max.wait.ms": 10})
    c.assign([("lat-out", 0, -2)])
    lat: list[float] = []
    deadline = time.monotonic() + 120 + records * 0.02
    while len(lat) < records and time.monotonic() < deadline:
        for rec in c.poll(0.05):
            lat.append(time.time() - float(rec.value))
    stop.set()
    t.join(10)
    c.close()
    q.stop()
    lat.sort()
    if not lat:
        print("end-to-end latency: no record arrived")
        return
    p50, p90 = lat[len(lat) // 2], lat[int(len(lat) * 0.9)]
    print(f"end-to-end latency produce -> visible in the sink's topic ({len(lat)} records, "
          f"trigger 0): p50 {p50 * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms")


if __name__ == "__main__":
    main()
