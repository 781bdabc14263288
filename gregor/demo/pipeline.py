"""The demo's data path: flights published to `flights` as Confluent-framed Avro (the producer's
bulk path), a Structured Streaming query computing hourly delay statistics into
`flight-delays` (Avro again, its schema derived from the DataFrame and registered by the
sink), a second query copying those into Parquet, and the batch read that the report starts
from. Every Spark read and write goes through format("gregor") with valueFormat=avro and the
Schema Registry: the columns are typed by the registered schemas, no JSON in between."""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .data import FLIGHT_AVRO, carrier_partitions, flights_arrow, to_spark

FLIGHTS_TOPIC = "flights"
DELAYS_TOPIC = "flight-delays"

# One hourly statistics cell per (hour, origin, carrier), an Avro record on `flight-delays`
# (the sink derives its schema from these columns' Spark types). Sums and counts (not
# averages) so that the report can roll cells up into any grouping exactly.
CELL_COLUMNS = ("hour_start", "origin", "carrier", "airline", "flights", "cancelled", "dep_delay_sum",
                "dep_delay_n", "delayed_15", "max_dep_delay", "arr_delay_sum", "arr_delay_n", "temp",
                "wind_speed", "precip", "visib")


def subject(topic: str) -> str:
    return f"{topic}-value"      # the topic name strategy, the serializers' and the sink's default


@dataclass
class DemoSettings:
    bootstrap: str
    output: Path
    work: Path
    partitions: int = 4
    max_offsets_per_trigger: int = 60_000
    replication: int = 1          # replication factor of the demo's topics (--brokers N)
    schema_registry: str = ""     # the registry's URL (values are Confluent-framed Avro)
    # Event-time lateness the aggregation tolerates. Micro-batches take the same share of every
    # partition's backlog, so partitions stay close in event time, but carriers' schedules
    # differ over the year; a day covers that skew with room to spare (hours would drop rows).
    watermark: str = "1 day"

    @property
    def client(self) -> dict:
        return {"kafka.bootstrap.servers": self.bootstrap}

    @property
    def avro(self) -> dict:
        """Source / sink options: the value column is Avro through the registry."""
        return {"valueFormat": "avro", "schemaRegistryUrl": self.schema_registry}

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
    """Start from nothing: drop the demo's topics (when they exist), their subjects in the
    registry and local state, then create the topics again, so a second run never sees the
    first run's records, schemas or checkpoints."""
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
    _drop_subjects(s.schema_registry, [subject(FLIGHTS_TOPIC), subject(DELAYS_TOPIC)])


def _drop_subjects(url: str, subjects: list[str]) -> None:
    """Soft, then hard delete (Confluent's order): the next registration is version 1 again."""
    from gregor.schema_registry import SchemaRegistryClient, SubjectDeletedError
    reg = SchemaRegistryClient({"url": url})
    present = set(reg.get_subjects(deleted=True))
    for name in subjects:
        if name not in present:
            continue
        try:
            reg.delete_subject(name)
        except SubjectDeletedError:
            pass          # soft-deleted already (an interrupted run)
        reg.delete_subject(name, permanent=True)


def schemas(url: str) -> list[dict]:
    """The latest registered schema of `flights` and `flight-delays` values, for the report."""
    from gregor.schema_registry import SchemaRegistryClient
    reg = SchemaRegistryClient({"url": url})
    out = []
    for topic in (FLIGHTS_TOPIC, DELAYS_TOPIC):
        latest = reg.get_latest_version(subject(topic))
        out.append({"topic": topic, "subject": latest.subject, "version": latest.version,
                    "id": latest.schema_id, "schema": latest.schema.schema_str})
    return out


def _wait(ready: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    # Topic creation and deletion finish asynchronously on a Kafka cluster; 30 s is ample.
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.2)


# Rows per send_batch call: the progress bar moves between calls.
PUBLISH_CHUNK = 20_000


def publish_flights(s: DemoSettings, flights_pd, on_progress: Callable[[int], None]) -> int:
    """Write the flights as Confluent-framed Avro (FLIGHT_AVRO, registered under
    `flights-value`) with the producer's bulk path, keyed by carrier, each carrier on one
    partition in scheduled-departure order. Returns the records the topic then holds."""
    import numpy as np
    import pyarrow as pa

    from gregor.client.producer import Producer
    from gregor.schema_registry import SchemaRegistryClient
    from gregor.serde import AvroSerializer
    placement = carrier_partitions(flights_pd, s.partitions)
    partition = flights_pd["carrier"].map(placement).to_numpy()
    values, keys = flights_arrow(flights_pd), pa.array(flights_pd["carrier"]).cast(pa.binary())
    producer = Producer({"bootstrap.servers": s.bootstrap, "acks": "all", "linger.ms": 5,
                         "value.serializer": AvroSerializer(SchemaRegistryClient(
                             {"url": s.schema_registry}), FLIGHT_AVRO)})
    sent = 0
    try:
        pending = []
        for p in range(s.partitions):
            rows = pa.array(np.flatnonzero(partition == p))
            for lo in range(0, len(rows), PUBLISH_CHUNK):
                take = rows[lo:lo + PUBLISH_CHUNK]
                # a typed value column: the serializer writes each row as framed Avro
                pending.append(producer.send_batch(FLIGHTS_TOPIC, pa.table(
                    {"key": keys.take(take), "value": values.take(take)}), partition=p))
                sent += len(take)
                on_progress(sent)
        producer.flush()
        for r in pending:
            r.result()          # raises when a batch failed
    finally:
        producer.close()
    from gregor.spark.client import TopicMetadata
    meta = TopicMetadata({"bootstrap.servers": s.bootstrap})
    try:
        n = sum(meta.latest([(FLIGHTS_TOPIC, p) for p in range(s.partitions)]).values())
    finally:
        meta.close()
    on_progress(n)
    return n


def delay_stats_stream(spark: SparkSession, s: DemoSettings, airlines_pd, weather_pd) -> DataFrame:
    """flights (stream) + airline names + the origin's weather that hour -> hourly cells."""
    # Both tables are small (16 and ~26k rows): broadcast them so that every micro-batch joins
    # without shuffling them again.
    airlines = F.broadcast(to_spark(spark, airlines_pd).coalesce(1).cache())
    weather = F.broadcast(to_spark(spark, weather_pd).coalesce(1).cache())
    # value: a struct typed by the latest schema of `flights-value` (read once, here)
    raw = (spark.readStream.format("gregor").options(**s.client, **s.avro)
           .option("subscribe", FLIGHTS_TOPIC).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", s.max_offsets_per_trigger).load())
    flights = raw.select("value.*")
    joined = (flights.join(airlines, "carrier", "left")
              .join(weather, ["origin", "time_hour"], "left"))
    dep = F.col("dep_delay")
    cells = (joined.withWatermark("sched_departure", s.watermark)
             .groupBy(F.window("sched_departure", "1 hour").alias("w"), "origin", "carrier", "airline")
             .agg(F.count(F.lit(1)).alias("flights"),
                  F.sum(F.when(F.col("dep_time").isNull(), 1).otherwise(0)).alias("cancelled"),
                  F.sum(dep).alias("dep_delay_sum"), F.count(dep).alias("dep_delay_n"),
                  F.sum(F.when(dep > 15, 1).otherwise(0)).alias("delayed_15"),
                  F.max(dep).alias("max_dep_delay"),
                  F.sum("arr_delay").alias("arr_delay_sum"), F.count("arr_delay").alias("arr_delay_n"),
                  F.avg("temp").alias("temp"), F.avg("wind_speed").alias("wind_speed"),
                  F.avg("precip").alias("precip"), F.avg("visib").alias("visib"))
             .withColumn("hour_start", F.col("w.start")).drop("w"))
    return cells.select(F.col("carrier").alias("key"), F.struct(*CELL_COLUMNS).alias("value"))


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
    # valueFormat=avro: the sink registers the cells' schema under `flight-delays-value`
    return (cells.writeStream.format("gregor").queryName("hourly-delays").options(**s.client, **s.avro)
            .option("topic", DELAYS_TOPIC).outputMode("append")
            # each micro-batch in transactions the driver commits: a retried task or a
            # replayed micro-batch (the restarts above) never duplicates a cell
            .option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", "gregor-demo")
            .option("checkpointLocation", str(s.checkpoints / "hourly-delays"))
            .trigger(availableNow=True).start())


def start_parquet_query(spark: SparkSession, s: DemoSettings):
    """`flight-delays` -> Parquet, a second streaming query (exactly-once through the file sink)."""
    cells = (spark.readStream.format("gregor").options(**s.client, **s.avro).option("subscribe", DELAYS_TOPIC)
             .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed").load()
             .select("value.*"))
    return (cells.writeStream.format("parquet").queryName("delays-to-parquet")
            .option("path", str(s.parquet))
            .option("checkpointLocation", str(s.checkpoints / "delays-to-parquet"))
            .trigger(availableNow=True).start())


def read_cells(spark: SparkSession, s: DemoSettings) -> DataFrame:
    """Batch read of `flight-delays` (the report's input): committed transactions only."""
    return (spark.read.format("gregor").options(**s.client, **s.avro).option("subscribe", DELAYS_TOPIC)
            .option("kafka.isolation.level", "read_committed").load().select("value.*"))
