"""A Spark driver for tests/spark/test_spark_exactly_once_kill.py, run as its own process so the
test can kill it with SIGKILL: a streaming query from a gregor topic to another through the
exactly-once sink, Trigger.AvailableNow, capped micro-batches.

    python eos_kill_driver.py BOOTSTRAP SRC DST CHECKPOINT MAX_OFFSETS_PER_TRIGGER

With GREGOR_TEST_KILL_AT=<point>:<batch id> the query writes through a subclass of the sink
that stops at one point of that micro-batch: it writes the file <point> into GREGOR_TEST_MARKS
and blocks there until the test kills the process group. The points:

- `tasks`: task 0 has written its rows and its batch-id offset in its transaction, left open
  (the sink's prepare step); task 1 has sent part of its rows and blocks. No commit yet.
- `commit-half`: the driver has committed task 0's transaction, not task 1's.
- `committed`: the driver has committed every transaction of the batch; Spark has not written
  the batch to its commit log.

Without it the query runs the unmodified `format("gregor")` sink to the end and prints the
micro-batches it ran (`batches <id>:<rows> ...`).
"""
from __future__ import annotations

import os
import sys
import time


def _kill_at(batch: int, point: str) -> bool:
    want = os.environ.get("GREGOR_TEST_KILL_AT", "")
    return want == f"{point}:{batch}"


def _block(point: str, note: str = "") -> None:
    """Tell the test this point is reached, then wait for the SIGKILL."""
    marks = os.environ["GREGOR_TEST_MARKS"]
    tmp = os.path.join(marks, f".{point}.tmp")
    with open(tmp, "w") as f:
        f.write(note)
    os.replace(tmp, os.path.join(marks, point))
    time.sleep(600)
    raise SystemExit(f"kill point {point} was never killed")


def _hooked_source():
    from gregor.spark import exactly_once
    from gregor.spark.source import GregorDataSource, GregorStreamWriter

    class HookedWriter(GregorStreamWriter):
        def write(self, iterator):
            from pyspark import TaskContext
            ctx = TaskContext.get()
            batch = int(ctx.getLocalProperty(exactly_once.BATCH_ID_PROPERTY))
            if not _kill_at(batch, "tasks"):
                return super().write(iterator)
            if ctx.partitionId() == 0:
                msg = super().write(iterator)          # rows + offset in an open transaction
                _block("task0-prepared", f"{msg.transactional_id} {msg.rows}")
            # task 1: send its first Arrow batch at once (no coalescing), then stop
            import gregor.spark.client as client
            client.COALESCE_BYTES = 0

            def first_then_block():
                it = iter(iterator)
                first = next(it, None)
                if first is not None:
                    yield first
                time.sleep(0.5)      # the producer's sender thread sends it meanwhile
                _block("task1-blocked")
            return super().write(first_then_block())

        def commit(self, messages, batchId):
            if _kill_at(batchId, "commit-half"):
                done = [m for m in messages if m is not None and m.transactional_id]
                exactly_once.end_all(self.opts.client, done[:1], commit=True)
                _block("commit-half", done[0].transactional_id if done else "")
            super().commit(messages, batchId)
            if _kill_at(batchId, "committed"):
                _block("committed")

    class HookedSource(GregorDataSource):
        @classmethod
        def name(cls):
            return "gregor_kill_hooks"

        def streamWriter(self, schema, overwrite):
            return HookedWriter(self._sink_options(schema))

    return HookedSource


def main() -> None:
    bootstrap, src, dst, ck, cap = sys.argv[1:6]
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from gregor.spark import register
    spark = (SparkSession.builder.master("local[2]").appName("gregor-eos-kill")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             # small Arrow batches, so that task 1 of the `tasks` point sends part of its rows
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
             # a short run on a busy 2-core machine: C1 only starts ~10-20% faster
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    sink = "gregor"
    if os.environ.get("GREGOR_TEST_KILL_AT"):
        spark.dataSource.register(_hooked_source())
        sink = "gregor_kill_hooks"
    q = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", cap).load()
         .selectExpr("value")
         .writeStream.format(sink).option("kafka.bootstrap.servers", bootstrap)
         .option("topic", dst).option("deliveryGuarantee", "exactly-once")
         .option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    print("batches " + " ".join(f"{p['batchId']}:{p['numInputRows']}" for p in q.recentProgress),
          flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
