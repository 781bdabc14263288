"""The demo's Spark job: publish flights to `flights`, a Structured Streaming query computing hourly
delay statistics into `flight-delays`, a second query copying those into Parquet, and the
batch read that the report starts from. Every read and write goes through format("gregor")."""
from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .data import FLIGHT_SCHEMA, carrier_partitions, to_spark

FLIGHTS_TOPIC = "flights"
DELAYS_TOPIC = "flight-delays"

# One hourly statistics cell per (hour, origin, carrier), as JSON on `flight-delays`. Sums and
# counts (not averages) so that the report can roll cells up into any grouping exactly.
CELL_SCHEMA = ("hour_start timestamp, origin string, carrier string, airline string, flights long, "
               "cancelled long, dep_delay_sum double, dep_delay_n long, delayed_15 long, "
               "max_dep_delay double, arr_delay_sum double, arr_delay_n long, temp double, "
               "wind_speed double, precip double, visib double")


@dataclass
class DemoSettings:
    bootstrap: str
    output: Path
    work: Path
    partitions: int = 4
    max_offsets_per_trigger: int = 60_000
    replication: int = 1          # replication factor of the demo's topics (--brokers N)
    # Event-time lateness the aggregation tolerates. Micro-batches take the same share of every
    # partition's backlog, so partitions stay close in event time, but carriers' schedules
    # differ over the year; a day covers that skew with room to spare (hours would drop rows).
    watermark: str = "1 day"

    @property
    def client(self) -> dict:
        return {"kafka.bootstrap.servers": self.bootstrap}

    @property
    def checkpoints(self) -> Path:
        return self.work / "checkpoints"

    @property
    def parquet(self) -> Path:
        return self.output / "flight-delays.parquet"


@dataclass
class StreamStats:
    batches: int = 0
    input_rows: int = 0
    dropped_late_rows: int = 0
    seconds: float = 0.0
    per_batch: list = field(default_factory=list)


# Spark's own log lines would bury the demo's progress: errors only, on stderr (the repl
# logger at the same level keeps PySpark from announcing its default level).
_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def new_session(app: str = "gregor-demo", cores: int = 2, work: Path | None = None) -> SparkSession:
    """A local Spark session for the demo and the benchmark; quiet logs when `work` is given."""
    import os
    import sys
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        (work / "log4j2.properties").write_text(_LOG4J2)
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-Dlog4j2.configurationFile=file:{work / 'log4j2.properties'}")
    spark = (builder.master(f"local[{cores}]").appName(app)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(2 * cores))
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.streaming.noDataMicroBatches.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from gregor.spark import register
    register(spark)
    return spark


def prepare_topics(s: DemoSettings, fresh_dirs: list[Path]) -> None:
    """Start from nothing: drop the demo's topics (when they exist) and local state, then create
    the topics again, so a second run never sees the first run's records or checkpoints."""
    from gregor.client.admin import AdminClient, NewTopic
    for d in fresh_dirs:
        shutil.rmtree(d, ignore_errors=True)
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    try:
        existing = set(admin.list_topics())
        old = [t for t in (FLIGHTS_TOPIC, DELAYS_TOPIC) if t in existing]
        if old:
            admin.delete_topics(old)
            _wait(lambda: not (set(admin.list_topics()) & set(old)), "old demo topics to be deleted")
        # Records carry their publish time as timestamp (the flight's 2013 departure time is in
        # the value), so time-based retention would be harmless; the demo keeps its data anyway.
        keep = {"retention.ms": "-1"}
        if s.replication > 1:
            keep["min.insync.replicas"] = "2"      # acks=all then means two copies at least
        admin.create_topics([NewTopic(FLIGHTS_TOPIC, s.partitions, s.replication, keep),
                             NewTopic(DELAYS_TOPIC, 2, s.replication, keep)])
        _wait(lambda: {FLIGHTS_TOPIC, DELAYS_TOPIC} <= set(admin.list_topics()), "demo topics to exist")
    finally:
        admin.close()


def _wait(ready: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    # Topic creation and deletion finish asynchronously on a Kafka cluster; 30 s is ample.
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.2)


def publish_flights(spark: SparkSession, s: DemoSettings, flights_pd, on_progress: Callable[[int], None]) -> int:
    """Write the flights through the gregor batch sink, keyed by carrier, each partition written
    by exactly one Spark task in scheduled-departure order."""
    placement = carrier_partitions(flights_pd, s.partitions)
    # The JSON values are made by pandas in one vectorised call; Spark then only moves three
    # small columns through its shuffle (one task per topic partition keeps the order).
    values = flights_pd.to_json(orient="records", lines=True, date_format="iso", date_unit="s")
    import pandas as pd
    frame = pd.DataFrame({
        "partition": flights_pd["carrier"].map(placement).astype("int32"),
        "seq": range(len(flights_pd)),
        "key": flights_pd["carrier"],
        "value": values.splitlines(),
    })
    out = (to_spark(spark, frame).repartition(s.partitions, "partition")
           .sortWithinPartitions("partition", "seq").select("key", "value", "partition"))
    watcher = _OffsetWatcher(s.bootstrap, FLIGHTS_TOPIC, s.partitions, on_progress)
    watcher.start()
    try:
        out.write.format("gregor").options(**s.client).option("topic", FLIGHTS_TOPIC).mode("append").save()
        return watcher.poll()
    finally:
        watcher.stop()
        watcher.close()


class _OffsetWatcher(threading.Thread):
    """Reports how many records the topic holds while a write runs (progress for the user)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, on_progress):
        super().__init__(name="gregor-demo-progress", daemon=True)
        from gregor.spark.client import TopicMetadata
        self._meta = TopicMetadata({"bootstrap.servers": bootstrap})
        self._tps = [(topic, p) for p in range(partitions)]
        self._on_progress = on_progress
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def poll(self) -> int:
        with self._lock:
            n = sum(self._meta.latest(self._tps).values())
        self._on_progress(n)
        return n

    def run(self):
        while not self._halt.wait(0.5):
            try:
                self.poll()
            except Exception:  # progress only; the write itself reports real failures
                pass

    def stop(self):
        self._halt.set()
        self.join()

    def close(self):
        self._meta.close()


def delay_stats_stream(spark: SparkSession, s: DemoSettings, airlines_pd, weather_pd) -> DataFrame:
    """flights (stream) + airline names + the origin's weather that hour -> hourly cells."""
    # Both tables are small (16 and ~26k rows): broadcast them so that every micro-batch joins
    # without shuffling them again.
    airlines = F.broadcast(to_spark(spark, airlines_pd).coalesce(1).cache())
    weather = F.broadcast(to_spark(spark, weather_pd).coalesce(1).cache())
    raw = (spark.readStream.format("gregor").options(**s.client)
           .option("subscribe", FLIGHTS_TOPIC).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", s.max_offsets_per_trigger).load())
    flights = (raw.select(F.from_json(F.col("value").cast("string"), FLIGHT_SCHEMA).alias("f"))
               .select("f.*")
               .withColumn("dep_delay", F.nanvl("dep_delay", F.lit(None)))
               .withColumn("arr_delay", F.nanvl("arr_delay", F.lit(None))))
    joined = (flights.join(airlines, "carrier", "left")
              .join(weather, ["origin", "time_hour"], "left"))
    dep = F.col("dep_delay")
    cells = (joined.withWatermark("sched_departure", s.watermark)
             .groupBy(F.window("sched_departure", "1 hour").alias("w"), "origin", "carrier", "airline")
             .agg(F.count(F.lit(1)).alias("flights"),
                  F.sum(F.when(F.col("dep_time").isNull() | F.isnan("dep_time"), 1).otherwise(0)).alias("cancelled"),
                  F.sum(dep).alias("dep_delay_sum"), F.count(dep).alias("dep_delay_n"),
                  F.sum(F.when(dep > 15, 1).otherwise(0)).alias("delayed_15"),
                  F.max(dep).alias("max_dep_delay"),
                  F.sum("arr_delay").alias("arr_delay_sum"), F.count("arr_delay").alias("arr_delay_n"),
                  F.avg("temp").alias("temp"), F.avg("wind_speed").alias("wind_speed"),
                  F.avg("precip").alias("precip"), F.avg("visib").alias("visib"))
             .withColumn("hour_start", F.col("w.start")).drop("w"))
    return cells.select(F.col("carrier").alias("key"), F.to_json(F.struct(*[
        c.split()[0] for c in CELL_SCHEMA.split(", ")])).alias("value"))


def run_query(query, on_batch: Callable[[dict], None], poll_s: float = 0.5,
              stats: StreamStats | None = None) -> StreamStats:
    """Wait for an availableNow query, reporting every finished micro-batch (added to `stats`
    as they finish, so a failed run still counts what it did)."""
    stats = stats or StreamStats()
    seen = -1
    t0 = time.monotonic()

    def drain():
        nonlocal seen
        for p in query.recentProgress:
            if p["batchId"] <= seen:
                continue
            seen = p["batchId"]
            rows = int(p.get("numInputRows") or 0)
            dropped = sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in p.get("stateOperators") or [])
            stats.batches += 1
            stats.input_rows += rows
            stats.dropped_late_rows += dropped
            stats.per_batch.append({"batch": p["batchId"], "rows": rows,
                                    "duration_ms": p.get("batchDuration"),
                                    "phases_ms": dict(p.get("durationMs") or {})})
            on_batch({"batch": p["batchId"], "rows": rows, "total_rows": stats.input_rows})

    from pyspark.errors import StreamingQueryException
    try:
        while not query.awaitTermination(poll_s):
            drain()
    except StreamingQueryException:
        pass  # reported below with the query's name
    drain()
    if query.exception() is not None:
        raise RuntimeError(f"streaming query {query.name} failed: {query.exception()}")
    stats.seconds += time.monotonic() - t0
    return stats


# Spark gives a new Python worker 10 s (fixed) to connect back; on an overloaded machine the
# interpreter start can take longer and the query fails before doing anything. Restarting from
# the checkpoint is safe, so the demo tries again a couple of times.
_TRANSIENT = ("Python worker failed to connect back",)
MAX_RESTARTS = 2


def run_with_restarts(start: Callable[[], object], on_batch: Callable[[dict], None],
                      say: Callable[[str], None]) -> StreamStats:
    total = StreamStats()
    for attempt in range(MAX_RESTARTS + 1):
        try:
            return run_query(start(), on_batch, stats=total)
        except Exception as e:  # noqa: BLE001 - only the transient start-up failure is retried
            if attempt == MAX_RESTARTS or not any(t in str(e) for t in _TRANSIENT):
                raise
            say(f"[yellow]query failed to start a Python worker in time (machine busy); restarting it "
                f"from its checkpoint ({attempt + 1}/{MAX_RESTARTS})[/]")
    raise AssertionError("unreachable")


def start_delay_query(spark: SparkSession, s: DemoSettings, airlines_pd, weather_pd):
    cells = delay_stats_stream(spark, s, airlines_pd, weather_pd)
    return (cells.writeStream.format("gregor").queryName("hourly-delays").options(**s.client)
            .option("topic", DELAYS_TOPIC).outputMode("append")
            # each micro-batch in transactions the driver commits: a retried task or a
            # replayed micro-batch (the restarts above) never duplicates a cell
            .option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", "gregor-demo")
            .option("checkpointLocation", str(s.checkpoints / "hourly-delays"))
            .trigger(availableNow=True).start())


def start_parquet_query(spark: SparkSession, s: DemoSettings):
    """`flight-delays` -> Parquet, a second streaming query (exactly-once through the file sink)."""
    cells = (spark.readStream.format("gregor").options(**s.client).option("subscribe", DELAYS_TOPIC)
             .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed").load()
             .select(F.from_json(F.col("value").cast("string"), CELL_SCHEMA).alias("c")).select("c.*"))
    return (cells.writeStream.format("parquet").queryName("delays-to-parquet")
            .option("path", str(s.parquet))
            .option("checkpointLocation", str(s.checkpoints / "delays-to-parquet"))
            .trigger(availableNow=True).start())


def read_cells(spark: SparkSession, s: DemoSettings) -> DataFrame:
    """Batch read of `flight-delays` (the report's input): committed transactions only."""
    return (spark.read.format("gregor").options(**s.client).option("subscribe", DELAYS_TOPIC)
            .option("kafka.isolation.level", "read_committed").load()
            .select(F.from_json(F.col("value").cast("string"), CELL_SCHEMA).alias("c")).select("c.*"))
