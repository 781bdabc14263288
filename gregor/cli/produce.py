"""`gregor produce TOPIC`: send lines from stdin (or --file) as records.

    seq 1 1000 | gregor produce events
    gregor produce events --file data.txt --key-separator : --property acks=1
    gregor produce events --header source=cli --partition 2 < lines.txt
    gregor produce orders --value-format avro --schema order.avsc --schema-registry URL

Each line is one record value; with --key-separator the text before the first separator is
the key. A progress display (records sent / acknowledged, rate) goes to stderr.
"""
from __future__ import annotations

import sys
import threading

import click

from .client_options import (bootstrap_option, client_config, load_producer_class,
                             parse_props, with_friendly_errors)
from .serde_options import producer_serializers, serde_options


class _Tally:
    """Counts acknowledgements from the producer's sender thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = 0
        self.failed = 0
        self.first_error: Exception | None = None

    def callback(self, metadata, error):
        with self.lock:
            if error is None:
                self.acked += 1
            else:
                self.failed += 1
                if self.first_error is None:
                    self.first_error = error


def _lines(stream):
    for raw in stream:
        yield raw[:-1] if raw.endswith(b"\n") else raw


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("topic")
@click.option("--file", "path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Read lines from this file instead of stdin.")
@click.option("--key-separator", default=None,
              help="Split each line at the first SEP into key and value.")
@click.option("--partition", "-p", type=int, default=None,
              help="Send every record to this partition (default: the partitioner picks).")
@click.option("--header", "-H", "headers", multiple=True, metavar="KEY=VALUE",
              help="Add this header to every record (repeatable).")
@click.option("--property", "-X", "props", multiple=True, metavar="KEY=VALUE",
              help="Producer config, e.g. acks=all, linger.ms=5, compression.type=lz4.")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress display on stderr (default: when stderr is a terminal).")
@serde_options
@bootstrap_option
@with_friendly_errors
def command(topic, path, key_separator, partition, headers, props, progress, value_format,
            key_format, schema_path, key_schema_path, registry_url, registry_props, bootstrap,
            message_name):
    """Send lines from stdin (or --file) to TOPIC (with --value-format, each line is a JSON
    value written as Confluent-framed Avro / JSON Schema / Protobuf)."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    Producer = load_producer_class()
    sep = key_separator.encode() if key_separator else None
    hdrs = [(k, v.encode()) for k, v in parse_props(headers, "--header").items()] or None
    serializers = producer_serializers(value_format, key_format, schema_path, key_schema_path,
                                       registry_url, registry_props, message_name)
    producer = Producer(client_config(bootstrap, {**parse_props(props), **serializers}))
    tally = _Tally()
    console = Console(stderr=True)
    show = console.is_terminal if progress is None else progress
    stream = open(path, "rb") if path else sys.stdin.buffer
    sent = 0
    try:
        with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                      MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                      TimeElapsedColumn(), console=console, disable=not show,
                      transient=False) as bar:
            task = bar.add_task(f"producing to {topic}", total=None, rate="")
            for line in _lines(stream):
                key, value = None, line
                if sep is not None:
                    k, found, v = line.partition(sep)
                    if found:
                        key, value = k, v
                producer.send(topic, value=value, key=key, headers=hdrs, partition=partition,
                              callback=tally.callback)
                sent += 1
                if sent % 1000 == 0 and show:
                    elapsed = bar.tasks[0].elapsed or 1e-9
                    bar.update(task, completed=tally.acked, total=sent,
                               rate=f"{tally.acked / elapsed:,.0f} rec/s")
            producer.flush()
            elapsed = bar.tasks[0].elapsed or 1e-9
            bar.update(task, completed=tally.acked, total=sent,
                       rate=f"{tally.acked / elapsed:,.0f} rec/s")
    finally:
        if path:
            stream.close()
        producer.close()
    click.echo(f"Sent {tally.acked} records to {topic}"
               + (f", {tally.failed} failed" if tally.failed else ""), err=True)
    if tally.failed:
        raise click.ClickException(f"{tally.failed} records were not delivered; first error: "
                                   f"{tally.first_error}")
