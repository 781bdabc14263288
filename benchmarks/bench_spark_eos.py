"""The exactly-once Spark sink against the at-least-once one, side by side in one run.

    python benchmarks/bench_spark_eos.py [--rows 3000000] [--value-bytes 100] [--partitions 4]
                                         [--trigger-rows 500000] [--rounds 3]
                                         [--bootstrap-server HOST:PORT]

Batch write: one cached DataFrame (key, value) written to a fresh topic by each sink
(`deliveryGuarantee` at-least-once, the default, and exactly-once), after one unmeasured write
of each (the session's first Python data source writes pay worker start-up and JVM warm-up).
Streaming: a query from a topic of those rows to a fresh topic with each sink,
Trigger.AvailableNow and `maxOffsetsPerTrigger` = --trigger-rows, so each micro-batch commits
its own transactions; timed from start() to the end of the query (source read included).
Rounds alternate which sink goes first; prints rows/s per round, the best of each and the
ratio exactly-once / at-least-once of the bests (issue target >= 0.8x), and the ratio of each
round with their median (the machine is shared: a round's pair ran back to back), and the
CPU seconds per million rows of the whole process tree (JVM, Python workers, broker). Checks that
the exactly-once topics hold every row for read_committed readers. First, without Spark, the
fixed cost of one sink task in each mode (what a micro-batch pays per task whatever its size).
Starts its own gregor broker unless --bootstrap-server is given.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODES = ("at-least-once", "exactly-once")


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants: Spark's JVM, its Python
    workers, the broker (Linux /proc; children that already exited count only once reaped).
    Less disturbed than wall time by other work on a shared machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent, used = {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        f = stat[stat.rindex(")") + 2:].split()
        parent[int(d.name)] = int(f[1])
        used[int(d.name)] = sum(int(x) for x in f[11:15]) / ticks   # utime stime cutime cstime
    me, total = os.getpid(), 0.0
    for pid in used:
        p = pid
        while p > 1 and p != me:
            p = parent.get(p, 0)
        if p == me:
            total += used[pid]
    return total


def task_costs(bootstrap: str, topic: str, rounds: int = 20, rows: int = 50) -> None:
    """The fixed cost of one sink task, without Spark: what each task of a micro-batch pays
    (plus one EndTxn per task on the driver) whatever its rows. Medians over `rounds`."""
    import uuid

    import pyarrow as pa

    from gregor.spark import exactly_once as eo
    from gregor.spark.client import RecordWriter
    from gregor.spark.options import parse_sink_options
    from gregor.spark.source import _write_task
    batch = pa.RecordBatch.from_arrays([pa.array([b"x" * 100] * rows, pa.binary())], ["value"])
    alo = parse_sink_options({"topic": topic, "kafka.bootstrap.servers": bootstrap}, ["value"])
    eos = parse_sink_options({"topic": topic, "deliveryGuarantee": "exactly-once",
                              "kafka.bootstrap.servers": bootstrap}, ["value"])
    costs: dict[str, list[float]] = {}

    def clock(name, t0):
        t1 = time.perf_counter()
        costs.setdefault(name, []).append((t1 - t0) * 1000)
        return t1

    for _ in range(rounds + 1):     # the first round opens connections and loads coordinators
        t = time.perf_counter()
        _write_task(alo, iter([batch]))
        clock("at-least-once task", t)
        # exactly-once: write_task's steps one by one
        tid = f"bench-{uuid.uuid4().hex[:12]}"
        cfg = dict(eos.client, **{"transactional.id": tid})
        t = time.perf_counter()
        w = RecordWriter(cfg, topic, transactional=True)
        t = clock("InitProducerId", t)
        with eo.Coordinators(eos.client) as c:
            c.committed_offset(tid, (topic, 0))
        t = clock("progress OffsetFetch", t)
        w.write(batch)
        pid, epoch = w.prepare({(topic, 0): (0, "bench")}, tid)
        t = clock("send, flush, offsets", t)
        eo.end_all(eos.client, [eo.TaskTransaction(rows, tid, pid, epoch)], commit=True)
        clock("EndTxn (driver)", t)
    med = {k: statistics.median(v[1:]) for k, v in costs.items()}
    eos_total = sum(v for k, v in med.items() if k != "at-least-once task")
    print(f"fixed cost per task ({rows} rows, median of {rounds}): at-least-once "
          f"{med['at-least-once task']:.1f} ms; exactly-once {eos_total:.1f} ms = "
          + ", ".join(f"{k} {v:.1f}" for k, v in med.items() if k != "at-least-once task"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_SPARK_ROWS", 3_000_000)))
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4, help="topic partitions = Spark partitions")
    ap.add_argument("--trigger-rows", type=int, default=500_000,
                    help="maxOffsetsPerTrigger of the streaming runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bootstrap-server", default=None)
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from gregor.client.admin import AdminClient, NewTopic
    from gregor.demo.embedded import EmbeddedBroker
    from gregor.demo.pipeline import new_session

    work = Path(tempfile.mkdtemp(prefix="gregor-bench-spark-eos-"))
    broker = None
    names = iter(range(1_000_000))
    stamp = int(time.time())
    try:
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            broker = EmbeddedBroker(work / "broker")
            bootstrap = broker.start()
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def new_topic() -> str:
            name = f"bench-eos-{stamp}-{next(names)}"
            admin.create_topics([NewTopic(name, args.partitions, 1)])
            return name

        spark = new_session("gregor-bench-spark-eos", work=work / "spark")
        pad = "x" * max(0, args.value_bytes - 20)
        df = (spark.range(0, args.rows, numPartitions=args.partitions)
              .select(F.format_string("key-%d", F.col("id") % 10_000).cast("binary").alias("key"),
                      F.concat(F.format_string("%020d", F.col("id")), F.lit(pad)).cast("binary").alias("value"))
              .cache())
        df.count()
        n = args.rows
        print(f"{n:,} rows, {args.value_bytes} B values, {args.partitions} partitions, "
              f"micro-batches of {args.trigger_rows:,} rows, broker {bootstrap}")

        def batch_write(mode: str) -> str:
            topic = new_topic()
            (df.write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", topic).option("deliveryGuarantee", mode).mode("append").save())
            return topic

        def stream_write(mode: str, src: str) -> tuple[str, int, dict]:
            topic = new_topic()
            q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", src).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", args.trigger_rows).load()
                 .select("key", "value")
                 .writeStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", topic).option("deliveryGuarantee", mode)
                 .option("checkpointLocation", str(work / f"ck-{topic}"))
                 .trigger(availableNow=True).start())
            q.awaitTermination()
            if q.exception() is not None:
                raise RuntimeError(q.exception())
            # where a query's time goes: Spark's per-batch durations, summed (seconds)
            spent = {}
            for prog in q.recentProgress:
                for k, v in prog["durationMs"].items():
                    spent[k] = spent.get(k, 0) + v / 1000
            return topic, len(q.recentProgress), spent

        def timed(fn, *args):
            """(rows/s, CPU seconds per million rows, fn's result)"""
            c0, t0 = tree_cpu(), time.perf_counter()
            out = fn(*args)
            return n / (time.perf_counter() - t0), (tree_cpu() - c0) / n * 1e6, out

        task_costs(bootstrap, new_topic())
        # Unmeasured: the first write and the first streaming query of each kind start
        # Spark's Python workers and warm the JVM's Arrow paths (seconds on 2 cores).
        src = batch_write("at-least-once")
        batch_write("exactly-once")
        for m in MODES:
            stream_write(m, src)

        results = {(kind, m): [] for kind in ("batch", "stream") for m in MODES}
        cpus = {(kind, m): [] for kind in ("batch", "stream") for m in MODES}
        eos_topics = []
        for r in range(args.rounds):
            order = MODES if r % 2 == 0 else MODES[::-1]
            for m in order:
                rate, cpu, topic = timed(batch_write, m)
                results[("batch", m)].append(rate)
                cpus[("batch", m)].append(cpu)
                print(f"  round {r + 1} batch  write {m:<14} {rate:12,.0f} rows/s, "
                      f"CPU {cpu:.2f} s per 1M rows")
                if m == "exactly-once":
                    eos_topics.append(topic)
            for m in order:
                rate, cpu, (topic, batches, spent) = timed(stream_write, m, src)
                results[("stream", m)].append(rate)
                cpus[("stream", m)].append(cpu)
                print(f"  round {r + 1} stream write {m:<14} {rate:12,.0f} rows/s, "
                      f"CPU {cpu:.2f} s per 1M rows ({batches} micro-batches; " + ", ".join(
                          f"{k} {v:.1f} s" for k, v in sorted(spent.items()) if v >= 0.05) + ")")
                if m == "exactly-once":
                    eos_topics.append(topic)

        for topic in eos_topics[-2:]:
            got = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                   .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
                   .load().count())
            if got != n:
                print(f"  WARNING: {topic} holds {got:,} committed records, expected {n:,}")
        for kind in ("batch", "stream"):
            alo_runs, eos_runs = results[(kind, "at-least-once")], results[(kind, "exactly-once")]
            alo, eos = max(alo_runs), max(eos_runs)
            ratios = [e / a for a, e in zip(alo_runs, eos_runs)]
            print(f"{kind:<6} best: at-least-once {alo:,.0f} rows/s, exactly-once {eos:,.0f} "
                  f"rows/s: ratio {eos / alo:.2f}x (target >= 0.8x); per round "
                  + ", ".join(f"{r:.2f}x" for r in ratios)
                  + f", median {statistics.median(ratios):.2f}x")
            c_alo = statistics.median(cpus[(kind, "at-least-once")])
            c_eos = statistics.median(cpus[(kind, "exactly-once")])
            print(f"{'':<6} CPU per 1M rows (median): at-least-once {c_alo:.2f} s, exactly-once "
                  f"{c_eos:.2f} s: {c_eos / c_alo:.2f}x")
        admin.close()
        spark.stop()
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
