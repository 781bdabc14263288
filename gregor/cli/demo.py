"""`gregor demo`: the flights pipeline on Spark and gregor, end to end.

    gregor demo [--output demo-output] [--bootstrap-server HOST:PORT [--schema-registry URL] |
                 --brokers N] [--limit N]
"""
from __future__ import annotations

from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-output"),
              show_default=True, help="Directory for the report, chart, Parquet files and work state.")
@click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT", default=None,
              help="Use this Kafka-compatible cluster instead of starting a gregor broker. The topics "
                   "'flights' and 'flight-delays' there are deleted and created afresh.")
@click.option("--schema-registry", "schema_registry", metavar="URL", default=None,
              help="With --bootstrap-server: the Schema Registry to register the Avro schemas in "
                   "(subjects flights-value and flight-delays-value are deleted and registered "
                   "afresh). Without it the demo starts a registry of its own as a client of that "
                   "cluster (state in its _schemas topic).")
@click.option("--limit", type=click.IntRange(min=100), default=None,
              help="Only the first N flights in departure order (a quick run; CI uses this).")
@click.option("--max-offsets-per-trigger", type=click.IntRange(min=1), default=None,
              help="Records per micro-batch (default: about a sixth of the flights).")
@click.option("--partitions", type=click.IntRange(min=1, max=64), default=4, show_default=True,
              help="Partitions of the 'flights' topic.")
@click.option("--brokers", type=click.IntRange(min=1, max=9), default=1, show_default=True,
              help="Run on a local gregor cluster of this many brokers (ZooKeeper included; "
                   "topics replicated min(3, N) times) instead of one broker.")
def command(output, bootstrap, schema_registry, limit, max_offsets_per_trigger, partitions, brokers):
    """Publish the 2013 New York flights to gregor, compute hourly delay statistics with Spark
    Structured Streaming, and write a report (HTML, PNG chart, Parquet)."""
    try:
        from gregor.demo.run import run_demo
    except ImportError as e:
        raise click.ClickException(f"the demo needs the demo extra ({e.name} is missing): "
                                   "pip install 'gregor-kafka[demo]'") from None
    if brokers > 1 and bootstrap:
        raise click.BadParameter("--brokers starts a local cluster; it cannot be combined "
                                 "with --bootstrap-server", param_hint="--brokers")
    if schema_registry and not bootstrap:
        raise click.BadParameter("the demo's own broker serves a registry; --schema-registry "
                                 "goes with --bootstrap-server", param_hint="--schema-registry")
    run_demo(output=output, bootstrap=bootstrap, limit=limit,
             max_offsets_per_trigger=max_offsets_per_trigger, partitions=partitions,
             brokers=brokers, schema_registry=schema_registry)
