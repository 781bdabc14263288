"""`gregor consume TOPIC`: print records to stdout.

    gregor consume events --from-beginning --max-messages 10
    gregor consume events --partition 0 --offset 42 --format json
    gregor consume events --format '{offset}\t{key}\t{value}' --exit-at-end
    gregor consume events --group orders-app --from-beginning
    gregor consume orders --value-format avro --schema-registry URL --from-beginning -e

With --group the command joins that consumer group (its members share the partitions), starts
where the group committed (else at the end, or the beginning with --from-beginning) and commits
what it printed.

Formats: value (default), kv (key, separator, value), json (one object per line), or a
template with {topic} {partition} {offset} {timestamp} {key} {value} {headers}.
"""
from __future__ import annotations

import base64
import json
import signal
import sys
import time

import click

from .client_options import (bootstrap_option, client_config, parse_props,
                             with_friendly_errors)
from .serde_options import consumer_deserializers, serde_options


def _text(b: bytes | None) -> str:
    return "null" if b is None else b.decode("utf-8", "replace")


def _json_bytes(b: bytes | None):
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode()}


def make_formatter(fmt: str, separator: str):
    if fmt == "value":
        return lambda r: _text(r.value)
    if fmt == "kv":
        return lambda r: f"{_text(r.key)}{separator}{_text(r.value)}"
    if fmt == "json":
        def as_json(r):
            return json.dumps({
                "topic": r.topic, "partition": r.partition, "offset": r.offset,
                "timestamp": r.timestamp, "timestamp_type": r.timestamp_type_name,
                "key": _json_bytes(r.key), "value": _json_bytes(r.value),
                "headers": [[k, _json_bytes(v)] for k, v in r.headers]},
                ensure_ascii=False)
        return as_json
    if "{" in fmt:
        def template(r):
            return fmt.format(topic=r.topic, partition=r.partition, offset=r.offset,
                              timestamp=r.timestamp, key=_text(r.key), value=_text(r.value),
                              headers=",".join(f"{k}={_text(v)}" for k, v in r.headers))
        try:
            fmt.format(topic="", partition=0, offset=0, timestamp=0, key="", value="",
                       headers="")  # fail on a bad template before connecting
        except (KeyError, IndexError, ValueError) as e:
            raise click.BadParameter(f"bad template {fmt!r}: {e}", param_hint="--format")
        return template
    raise click.BadParameter(f"{fmt!r}: use value, kv, json or a template with {{value}}",
                             param_hint="--format")


def _start_offset(offset: str | None, from_beginning: bool):
    if offset is None:
        return -2 if from_beginning else -1
    named = {"earliest": -2, "beginning": -2, "latest": -1, "end": -1}
    if offset.lower() in named:
        return named[offset.lower()]
    try:
        value = int(offset)
    except ValueError:
        raise click.BadParameter(f"{offset!r}: use a number, earliest or latest",
                                 param_hint="--offset")
    if value < 0:
        raise click.BadParameter("offsets are >= 0 (or earliest / latest)",
                                 param_hint="--offset")
    return value


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("topic")
@click.option("--from-beginning", is_flag=True,
              help="Start at the earliest offset (default: only new records).")
@click.option("--partition", "-p", "partitions", type=int, multiple=True,
              help="Read only this partition (repeatable; default: all).")
@click.option("--offset", "-o", default=None,
              help="Start offset for the chosen partitions: a number, earliest or latest.")
@click.option("--max-messages", "-n", type=int, default=None,
              help="Exit after this many records.")
@click.option("--timeout-ms", type=int, default=None,
              help="Exit when no record arrives for this long.")
@click.option("--exit-at-end", "-e", is_flag=True,
              help="Exit once every partition is read to its end (as of startup).")
@click.option("--format", "-f", "fmt", default="value", show_default=True,
              help="value, kv, json, or a template such as '{offset}: {value}'.")
@click.option("--key-separator", default="\t", show_default=repr("\t"),
              help="Separator for --format kv.")
@click.option("--group", "-g", default=None,
              help="Join this consumer group and commit what was printed.")
@click.option("--property", "-X", "props", multiple=True, metavar="KEY=VALUE",
              help="Consumer config, e.g. isolation.level=read_committed (repeatable).")
@serde_options
@bootstrap_option
@with_friendly_errors
def command(topic, from_beginning, partitions, offset, max_messages, timeout_ms, exit_at_end,
            fmt, key_separator, group, props, value_format, key_format, schema_path,
            key_schema_path, registry_url, registry_props, bootstrap, message_name):
    """Print the records of TOPIC to stdout (with --value-format, values decoded through the
    Schema Registry and printed as JSON)."""
    from ..client.consumer import Consumer

    formatter = make_formatter(fmt, key_separator)
    # An explicit number applies to every chosen partition, as librdkafka's tools do.
    start = _start_offset(offset, from_beginning)
    extra = {"allow.auto.create.topics": False}
    if group is not None:
        if partitions or offset is not None:
            raise click.BadParameter("the group assigns partitions and offsets; drop "
                                     "--partition/--offset or --group", param_hint="--group")
        # Commits follow what was printed (below), not what was fetched.
        extra.update({"group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest" if from_beginning else "latest"})
    extra.update(consumer_deserializers(value_format, key_format, schema_path, key_schema_path,
                                        registry_url, registry_props))
    cfg = client_config(bootstrap, {**extra, **parse_props(props)})
    consumer = Consumer(cfg)
    stop = {"now": False}
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        stop["now"] = True
        consumer.wakeup()

    try:
        signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread (e.g. embedded): Ctrl-C handling stays default
        previous = None
    count = 0
    try:
        available = consumer.partitions_for_topic(topic)
        if not available:
            raise click.ClickException(f"topic {topic!r} has no partitions")
        chosen = list(partitions) or available
        missing = sorted(set(chosen) - set(available))
        if missing:
            raise click.ClickException(f"topic {topic!r} has partitions "
                                       f"{available[0]}..{available[-1]}; no {missing}")
        ends = None
        if group is not None:
            consumer.subscribe([topic])
            if exit_at_end:  # the ends as of startup, for whichever partitions come our way
                ends = consumer.end_offsets([(topic, p) for p in chosen])
        else:
            consumer.assign([(topic, p, start) for p in chosen])
            if exit_at_end:
                ends = consumer.end_offsets([(topic, p) for p in chosen])
        printed: dict = {}
        last_record = time.monotonic()
        out = sys.stdout
        while not stop["now"]:
            held = consumer.assignment() if group is not None else list(ends or ())
            if ends is not None and held and all(consumer.position(*tp) >= ends[tp]
                                                 for tp in held):
                break
            records = consumer.poll(0.5)
            if records:
                last_record = time.monotonic()
            for r in records:
                if ends is not None and r.offset >= ends.get((r.topic, r.partition), 0):
                    continue
                out.write(formatter(r) + "\n")
                printed[(r.topic, r.partition)] = r.offset + 1
                count += 1
                if max_messages is not None and count >= max_messages:
                    stop["now"] = True
                    break
            out.flush()
            if group is not None and printed:
                _commit(consumer, printed, asynchronous=True)
            if timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= timeout_ms:
                break
        if group is not None and printed:
            _commit(consumer, printed, asynchronous=False)
    finally:
        consumer.close()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    click.echo(f"Processed a total of {count} messages", err=True)


def _commit(consumer, printed: dict, *, asynchronous: bool) -> None:
    """Commit what was printed; a rebalance may have moved a partition away meanwhile (then its
    new owner commits it)."""
    held = set(consumer.assignment())
    mine = {tp: o for tp, o in printed.items() if tp in held}
    if not mine:
        return
    try:
        consumer.commit(offsets=mine, asynchronous=asynchronous)
    except Exception as e:  # noqa: BLE001 - printed records stay printed
        click.echo(f"commit failed: {e}", err=True)
