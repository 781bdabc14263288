"""The first Spark write of a fresh session, split into Spark's, the Python worker's and
gregor's share.

    python benchmarks/bench_spark_first_write.py [--rows 1000] [--rounds 1]

Each round starts three fresh sessions (a JVM each, one after the other) and times the first
write of the same small DataFrame, then a second one, into:
  noop    Spark's built-in no-op sink: no Python worker at all -> Spark's share
  pynull  a Python data source sink that only iterates its Arrow batches
          (pynull - noop: the Python worker's share: its start, PySpark and pyarrow imports)
  gregor  format("gregor") into a topic of a broker this script starts
          (gregor - pynull: gregor's share)
The second write of each session shows what is left once everything is warm. Side by side in
one run, ratios printed; the machine is shared, so compare within a run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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


class PyNullFirstSink(DataSource):
    @classmethod
    def name(cls):
        return "pynull"

    def writer(self, schema, overwrite):
        return _Writer()
'''
KINDS = ("noop", "pynull", "gregor")


def child(kind: str, bootstrap: str, topic: str, rows: int, work: Path) -> dict:
    """One fresh session: its start, then the first and the second write of `kind`."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    spark = (SparkSession.builder.master("local[2]").appName(f"first-write-{kind}")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.local.dir", str(work / "spark")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    if kind == "pynull":
        sys.path.insert(0, str(work))
        from bench_pynull_first import PyNullFirstSink
        spark.dataSource.register(PyNullFirstSink)
    df = (spark.range(0, rows, numPartitions=2)
          .select(F.col("id").cast("string").cast("binary").alias("key"),
                  F.format_string("value-%010d", F.col("id")).cast("binary").alias("value")))
    session_s = time.perf_counter() - t0

    def write():
        w = df.write.format(kind).mode("append")
        if kind == "gregor":
            w = w.option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
        t = time.perf_counter()
        w.save()
        return time.perf_counter() - t
    first = write()
    second = write()
    spark.stop()
    return {"kind": kind, "session_s": session_s, "first_s": first, "second_s": second}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", choices=KINDS)
    ap.add_argument("--bootstrap", default="")
    ap.add_argument("--topic", default="")
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.bootstrap, args.topic, args.rows,
                               Path(args.work))))
        return

    from gregor.client.admin import AdminClient, NewTopic
    from gregor.demo.embedded import EmbeddedBroker
    work = Path(tempfile.mkdtemp(prefix="gregor-bench-first-write-"))
    (work / "bench_pynull_first.py").write_text(_NULL_SINK)
    env = dict(os.environ, PYTHONPATH=f"{work}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    broker = EmbeddedBroker(work / "broker")
    bootstrap = broker.start()
    topic = f"first-write-{int(time.time())}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
    results: dict[str, list[dict]] = {k: [] for k in KINDS}
    try:
        for r in range(args.rounds):
            for kind in KINDS:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", kind, "--bootstrap", bootstrap,
                     "--topic", topic, "--rows", str(args.rows), "--work", str(work)],
                    capture_output=True, text=True, env=env, check=True)
                res = json.loads(out.stdout.strip().splitlines()[-1])
                results[kind].append(res)
                print(f"round {r + 1} {kind:7s} session {res['session_s']:6.2f} s  first write "
                      f"{res['first_s']:6.2f} s  second {res['second_s']:6.2f} s", flush=True)
    finally:
        broker.stop()
    med = {k: statistics.median(x["first_s"] for x in v) for k, v in results.items()}
    warm = {k: statistics.median(x["second_s"] for x in v) for k, v in results.items()}
    spark_s, python_s = med["noop"], med["pynull"] - med["noop"]
    gregor_s = med["gregor"] - med["pynull"]
    total = med["gregor"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nfirst write of a fresh session, {args.rows:,} rows, median of {args.rounds} "
          f"round(s), load {load:.1f}:")
    print(f"  gregor first write {total:6.2f} s = Spark {spark_s:5.2f} s "
          f"({spark_s / total:.0%}) + Python worker {python_s:5.2f} s ({python_s / total:.0%}) "
          f"+ gregor {gregor_s:5.2f} s ({gregor_s / total:.0%})")
    print(f"  do-nothing Python sink's first write {med['pynull']:6.2f} s; "
          f"gregor/pynull {med['gregor'] / med['pynull']:.2f}x")
    print(f"  second writes: noop {warm['noop']:.2f} s, pynull {warm['pynull']:.2f} s, "
          f"gregor {warm['gregor']:.2f} s (gregor/pynull {warm['gregor'] / warm['pynull']:.2f}x)")


if __name__ == "__main__":
    main()
