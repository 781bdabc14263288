"""`gregor topics`: create, list, describe, delete and alter topics.

    gregor topics create events --partitions 6 --config retention.ms=86400000
    gregor topics list
    gregor topics describe events
    gregor topics alter events --partitions 12 --config cleanup.policy=compact
    gregor topics delete events
"""
from __future__ import annotations

import click

from .client_options import (bootstrap_option, client_config, parse_props,
                             with_friendly_errors)

_TIMEOUT = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for the broker.")


def _admin(bootstrap: str):
    from ..client.admin import AdminClient

    return AdminClient(client_config(bootstrap))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Create, list, describe, alter and delete topics."""


@command.command("create")
@click.argument("names", nargs=-1, required=True)
@click.option("--partitions", "-p", type=int, default=1, show_default=True)
@click.option("--replication-factor", "-r", type=int, default=-1,
              help="Replicas per partition (default: the broker's default).")
@click.option("--config", "-c", "configs", multiple=True, metavar="KEY=VALUE",
              help="Topic config, e.g. retention.ms=60000 (repeatable).")
@click.option("--if-not-exists", is_flag=True, help="Succeed when the topic already exists.")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def create(names, partitions, replication_factor, configs, if_not_exists, bootstrap, timeout):
    """Create one or more topics."""
    from ..client.admin import NewTopic

    cfg = parse_props(configs, "--config")
    with _admin(bootstrap) as admin:
        admin.create_topics([NewTopic(n, partitions, replication_factor, cfg) for n in names],
                            timeout=timeout, ignore_existing=if_not_exists)
    for n in names:
        click.echo(f"Created topic {n}.")


@command.command("list")
@click.option("--internal", is_flag=True, help="Include internal topics.")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def list_(internal, bootstrap, timeout):
    """List topic names, one per line."""
    with _admin(bootstrap) as admin:
        for name in admin.list_topics(timeout, include_internal=internal):
            click.echo(name)


@command.command("describe")
@click.argument("names", nargs=-1)
@click.option("--offsets/--no-offsets", default=True, show_default=True,
              help="Show each partition's earliest and latest offsets.")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def describe(names, offsets, bootstrap, timeout):
    """Describe topics (all of them when no name is given)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    with _admin(bootstrap) as admin:
        topics = admin.describe_topics(names, timeout) if names else admin.list_topics(timeout)
        for name, d in topics.items():
            try:
                configs = admin.describe_configs([name], timeout).get(name, {})
                shown = ",".join(f"{k}={e.value}" for k, e in sorted(configs.items())
                                 if not e.is_default and not e.is_sensitive)
            except Exception:  # brokers without DescribeConfigs still describe partitions
                shown = "?"
            console.print(f"Topic: {name}\tPartitionCount: {d.num_partitions}\t"
                          f"ReplicationFactor: {d.replication_factor}\tConfigs: {shown}")
            ends = {}
            if offsets and d.partitions:
                tps = [(name, p.partition) for p in d.partitions]
                first = admin.list_offsets({tp: "earliest" for tp in tps}, timeout)
                last = admin.list_offsets({tp: "latest" for tp in tps}, timeout)
                ends = {tp[1]: (first[tp].offset if first.get(tp) else 0,
                                last[tp].offset if last.get(tp) else 0) for tp in tps}
            table = Table(box=None, pad_edge=False, show_edge=False)
            for col in ("Partition", "Leader", "Replicas", "Isr"):
                table.add_column(col)
            if offsets:
                table.add_column("Earliest", justify="right")
                table.add_column("Latest", justify="right")
            for p in d.partitions:
                row = [str(p.partition), str(p.leader), ",".join(map(str, p.replicas)),
                       ",".join(map(str, p.isr))]
                if offsets:
                    lo, hi = ends.get(p.partition, (0, 0))
                    row += [str(lo), str(hi)]
                table.add_row(*row)
            console.print(table)


@command.command("delete")
@click.argument("names", nargs=-1, required=True)
@click.option("--if-exists", is_flag=True, help="Succeed when a topic does not exist.")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def delete(names, if_exists, bootstrap, timeout):
    """Delete topics."""
    with _admin(bootstrap) as admin:
        admin.delete_topics(list(names), timeout, ignore_missing=if_exists)
    for n in names:
        click.echo(f"Deleted topic {n}.")


@command.command("alter")
@click.argument("name")
@click.option("--partitions", "-p", type=int, default=None,
              help="New total partition count (can only grow).")
@click.option("--config", "-c", "configs", multiple=True, metavar="KEY=VALUE",
              help="Set a topic config (repeatable).")
@click.option("--delete-config", "deletes", multiple=True, metavar="KEY",
              help="Reset a topic config to its default (repeatable).")
@click.option("--append-config", "appends", multiple=True, metavar="KEY=VALUE",
              help="Add items to a list config, e.g. cleanup.policy=compact (repeatable).")
@click.option("--subtract-config", "subtracts", multiple=True, metavar="KEY=VALUE",
              help="Remove items from a list config (repeatable).")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def alter(name, partitions, configs, deletes, appends, subtracts, bootstrap, timeout):
    """Add partitions to a topic and/or change its configs (IncrementalAlterConfigs: the
    topic's other configs stay as they are)."""
    if partitions is None and not configs and not deletes and not appends and not subtracts:
        raise click.UsageError("nothing to alter: give --partitions, --config, "
                               "--delete-config, --append-config or --subtract-config")
    with _admin(bootstrap) as admin:
        if partitions is not None:
            admin.create_partitions({name: partitions}, timeout)
            click.echo(f"Topic {name} now has {partitions} partitions.")
        if appends or subtracts:
            ops = [("set", k, v) for k, v in parse_props(configs, "--config").items()]
            ops += [("delete", k, None) for k in deletes]
            ops += [("append", k, v)
                    for k, v in parse_props(appends, "--append-config").items()]
            ops += [("subtract", k, v)
                    for k, v in parse_props(subtracts, "--subtract-config").items()]
            admin.incremental_alter_configs({name: ops}, timeout)
            click.echo(f"Updated configs of topic {name}.")
        elif configs or deletes:
            changes = dict(parse_props(configs, "--config"))
            changes.update({k: None for k in deletes})
            admin.alter_configs({name: changes}, timeout)
            click.echo(f"Updated configs of topic {name}.")
