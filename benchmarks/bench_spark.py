"""Spark <-> gregor throughput, side by side with Parquet on the same data in one run.

    python benchmarks/bench_spark.py [--rows 5000000] [--value-bytes 100] [--partitions 4]
                                     [--rounds 3] [--bootstrap-server HOST:PORT]

Writes one cached DataFrame (key, value) to a gregor topic, to Parquet and to `pynull`, then
reads the topic and the Parquet files back in full (into Spark's no-op sink, so only the read
is measured), and prints rows/s and the ratios gregor / Parquet. The first write and read of
each kind pay the session's one-time Python worker start-up and JVM warm-up (printed
separately); then each runs --rounds times, taking turns, and the best round of each is the
steady rate (medians printed too). gregor writes with the sink's default compression (lz4;
Parquet's is snappy) and once more uncompressed, which is also read back. `pynull` is a
Python data source sink that only iterates the Arrow batches it is handed: what any Python
sink pays before doing anything, the floor under gregor's write. Targets (issue 24): write >= 1.0x
Parquet; read >= 2M rows/s on local[2]. Starts its own gregor broker unless --bootstrap-server
is given. The micro-batch overhead and end-to-end latency are in bench_spark_microbatch.py.
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

_NULL_SINK = '''
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


class _Writer(DataSourceArrowWriter):
    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()


class PyNullBatchSink(DataSource):
    @classmethod
    def name(cls):
        return "pynull"

    def writer(self, schema, overwrite):
        return _Writer()
'''


def cpu_by_kind() -> dict[int, tuple[str, float]]:
    """{pid: (kind, CPU seconds so far)} of this process's descendants: the JVM, Spark's
    Python workers, the gregor broker, other (Linux /proc; {} elsewhere). A process that
    ends between two looks is left out of the difference."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        procs[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks, cmd)
    mine, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    out = {}
    for pid in mine - {os.getpid()}:
        _, cpu, cmd = procs[pid]
        kind = ("broker" if " broker " in cmd else "jvm" if "java" in cmd
                else "python workers" if "pyspark" in cmd else "other")
        out[pid] = (kind, cpu)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_SPARK_ROWS", 5_000_000)))
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4, help="topic partitions = Spark partitions")
    ap.add_argument("--rounds", type=int, default=3, help="steady-state rounds of each write "
                    "and read (the best counts)")
    ap.add_argument("--bootstrap-server", default=None)
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from gregor.demo.embedded import EmbeddedBroker
    from gregor.demo.pipeline import new_session

    work = Path(tempfile.mkdtemp(prefix="gregor-bench-spark-"))
    broker = None
    try:
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            broker = EmbeddedBroker(work / "broker")
            bootstrap = broker.start()
        topic = f"bench-spark-{int(time.time())}"
        from gregor.client.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])
        admin.close()

        # The `pynull` sink must be importable by Spark's Python workers.
        (work / "bench_pynull_batch.py").write_text(_NULL_SINK)
        os.environ["PYTHONPATH"] = f"{work}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
        sys.path.insert(0, str(work))
        from bench_pynull_batch import PyNullBatchSink

        spark = new_session("gregor-bench-spark", work=work / "spark")
        spark.dataSource.register(PyNullBatchSink)
        pad = "x" * max(0, args.value_bytes - 20)
        df = (spark.range(0, args.rows, numPartitions=args.partitions)
              .select(F.format_string("key-%d", F.col("id") % 10_000).cast("binary").alias("key"),
                      F.concat(F.format_string("%020d", F.col("id")), F.lit(pad)).cast("binary").alias("value"))
              .cache())
        df.count()  # materialise once so both writers read the same cached rows
        n = args.rows
        print(f"{n:,} rows, {args.value_bytes} B values, {args.partitions} partitions, broker {bootstrap}")

        def timed(label, fn):
            cpu0 = cpu_by_kind()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            cpu1 = cpu_by_kind()
            spent: dict[str, float] = {}
            for pid, (kind, cpu) in cpu1.items():
                spent[kind] = spent.get(kind, 0.0) + cpu - cpu0.get(pid, (kind, 0.0))[1]
            used = "  ".join(f"{k} {spent.get(k, 0.0):5.2f}"
                             for k in ("jvm", "python workers", "broker"))
            print(f"  {label:<28} {dt:8.2f} s  {n / dt:12,.0f} rows/s   CPU s: {used}")
            return n / dt

        parquet = str(work / "data.parquet")

        def write_gregor(to_topic, compression=None):
            w = (df.write.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", to_topic))
            if compression:
                w = w.option("kafka.compression.type", compression)
            w.mode("append").save()

        # The first write of each kind pays the session's one-time costs (Spark starts its
        # Python workers, the JVM compiles its paths); after it, each kind writes --rounds
        # times, taking turns, each time to a fresh topic or directory, and the best round
        # of each is the steady rate (this machine is shared: one round of one kind can land
        # on a busy moment; the medians are printed too).
        w_parquet_first = timed("write Parquet (first)",
                                lambda: df.write.mode("overwrite").parquet(parquet))
        w_gregor_first = timed("write gregor topic (first)", lambda: write_gregor(topic))
        timed("write pynull (first)", lambda: df.write.format("pynull").mode("append").save())
        rates: dict[str, list[float]] = {}
        for r in range(args.rounds):
            again, plain_topic = f"{topic}-again{r}", f"{topic}-none{r}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(t, args.partitions, 1) for t in (again, plain_topic)])
            admin.close()
            out = str(work / f"again{r}.parquet")
            rates.setdefault("parquet", []).append(timed(
                f"write Parquet (round {r + 1})", lambda: df.write.mode("overwrite").parquet(out)))
            rates.setdefault("gregor", []).append(timed(
                f"write gregor topic (round {r + 1})", lambda: write_gregor(again)))
            rates.setdefault("pynull", []).append(timed(
                f"write pynull (round {r + 1})",
                lambda: df.write.format("pynull").mode("append").save()))
            # The sink compresses with lz4 unless told otherwise (as Parquet compresses with
            # snappy); the same write uncompressed is shown beside it.
            rates.setdefault("none", []).append(timed(
                f"write gregor uncompressed ({r + 1})", lambda: write_gregor(plain_topic, "none")))
            if r > 0:
                shutil.rmtree(work / f"again{r - 1}.parquet", ignore_errors=True)
        w_parquet, w_gregor, w_null, w_gregor_plain = (
            max(rates[k]) for k in ("parquet", "gregor", "pynull", "none"))
        plain_topic = f"{topic}-none0"

        def read_parquet():
            spark.read.parquet(parquet).write.format("noop").mode("overwrite").save()

        def read_gregor(from_topic=topic):
            (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", from_topic).load().write.format("noop").mode("overwrite")
             .save())

        # The first gregor read of a session also pays one-time costs that are not
        # throughput: Spark starts a Python daemon per worker kind (planning, reading), each
        # importing pyspark, pyarrow and gregor, and the JVM compiles its Arrow-to-row path
        # (several seconds on 2 cores, ~7 s for a first query of 4 rows). Then each read runs
        # --rounds times, taking turns; the best round is the steady rate.
        r_parquet_first = timed("read Parquet (first)", read_parquet)
        r_gregor_first = timed("read gregor topic (first)", read_gregor)
        for r in range(args.rounds):
            rates.setdefault("read parquet", []).append(
                timed(f"read Parquet (round {r + 1})", read_parquet))
            rates.setdefault("read gregor", []).append(
                timed(f"read gregor topic (round {r + 1})", read_gregor))
        r_parquet, r_gregor = max(rates["read parquet"]), max(rates["read gregor"])
        r_gregor_plain = timed("read gregor topic (none)", lambda: read_gregor(plain_topic))
        got = (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic).load().count())
        if got != n:
            print(f"  WARNING: the topic holds {got:,} records, expected {n:,}")
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"best of {args.rounds} rounds; medians: write gregor/Parquet "
              f"{med['gregor'] / med['parquet']:.2f}x, pynull/Parquet "
              f"{med['pynull'] / med['parquet']:.2f}x, read gregor/Parquet "
              f"{med['read gregor'] / med['read parquet']:.2f}x")
        print(f"write ratio gregor/Parquet: {w_gregor / w_parquet:.2f}x (target >= 1.0x); first "
              f"writes (session start-up included): {w_gregor_first / w_parquet_first:.2f}x; "
              f"uncompressed (kafka.compression.type=none): {w_gregor_plain / w_parquet:.2f}x")
        print(f"write floor: a do-nothing Python sink (pynull)/Parquet {w_null / w_parquet:.2f}x; "
              f"gregor/pynull {w_gregor / w_null:.2f}x")
        print(f"read  ratio gregor/Parquet: {r_gregor / r_parquet:.2f}x; gregor read {r_gregor:,.0f} rows/s "
              f"(target >= 2,000,000); Parquet read {r_parquet:,.0f} rows/s; uncompressed topic "
              f"{r_gregor_plain:,.0f} rows/s")
        print(f"first reads (session start-up included): gregor {r_gregor_first:,.0f} rows/s, "
              f"ratio {r_gregor_first / r_parquet_first:.2f}x")
        spark.stop()
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
