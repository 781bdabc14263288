"""`gregor groups`: consumer groups, like Kafka's kafka-consumer-groups.sh.

    gregor groups list
    gregor groups describe orders-app          # per partition: committed, log end, lag, member
    gregor groups reset-offsets orders-app --topic orders --to-earliest [--execute]
    gregor groups delete orders-app

reset-offsets prints the plan and changes nothing without --execute (as Kafka's tool); it needs
the group to have no members.
"""
from __future__ import annotations

from datetime import datetime, timezone

import click

from .client_options import bootstrap_option, client_config, with_friendly_errors

_TIMEOUT = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for the broker.")


def _admin(bootstrap: str):
    from ..client.admin import AdminClient

    return AdminClient(client_config(bootstrap))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """List, describe, reset and delete consumer groups."""


@command.command("list")
@click.option("--state", "states", multiple=True,
              help="Only groups in this state (Empty, Stable, PreparingRebalance, ...).")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def list_(states, bootstrap, timeout):
    """List the groups: id, state, type (classic or consumer, KIP-848) and protocol type,
    the columns of Kafka's kafka-groups.sh --list and of the console."""
    with _admin(bootstrap) as admin:
        for g in admin.list_groups(timeout, states=list(states) or None):
            click.echo(f"{g.group_id}\t{g.state or '?'}\t{g.group_type or 'classic'}\t"
                       f"{g.protocol_type}")


def _lag_rows(admin, group: str, timeout: float):
    """Every partition of the topics the group reads (committed to or assigned); where
    nothing is committed the lag counts from the partition's earliest offset (what a reset to
    earliest would read), and the row says so (its Committed is "-")."""
    from ..console.lag import partitions_read
    d = admin.describe_groups([group], timeout)[group]
    committed = admin.list_group_offsets(group, None, timeout)
    owner = {tp: m for m in d.members for tp in m.assignment}
    tps = partitions_read(admin, set(committed) | set(owner), timeout)
    ends = admin.list_offsets({tp: "latest" for tp in tps}, timeout) if tps else {}
    bare = [tp for tp in tps if tp not in committed]
    starts = admin.list_offsets({tp: "earliest" for tp in bare}, timeout) if bare else {}
    rows = []
    for tp in tps:
        c = committed.get(tp, (None, ""))[0]
        end = ends[tp].offset if ends.get(tp) else None
        base = c if c is not None else (starts[tp].offset if starts.get(tp) else None)
        lag = max(0, end - base) if base is not None and end is not None else None
        m = owner.get(tp)
        rows.append((tp[0], tp[1], c, end, lag, m))
    return d, rows


@command.command("describe")
@click.argument("group")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def describe(group, bootstrap, timeout):
    """A group's state, members and, per partition, committed offset, log end and lag."""
    from rich.console import Console
    from rich.table import Table

    # Wide enough never to cut a member id or topic name (people grep this output).
    console = Console(highlight=False, soft_wrap=True, width=100_000)
    with _admin(bootstrap) as admin:
        d, rows = _lag_rows(admin, group, timeout)
    if d.state == "Dead" and not rows:
        # kafka-consumer-groups.sh --describe's words; exit 1 so scripts can tell
        raise click.ClickException(f"Consumer group '{group}' does not exist.")
    console.print(f"Group: {group}\tState: {d.state}\tProtocol: {d.protocol or '-'}\t"
                  f"Members: {len(d.members)}")
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("Topic", "Partition", "Committed", "LogEnd", "Lag", "Member", "Host",
                "Client"):
        table.add_column(col, justify="right" if col in ("Partition", "Committed", "LogEnd",
                                                          "Lag") else "left")
    for topic, p, c, end, lag, m in rows:
        table.add_row(topic, str(p), "-" if c is None else str(c),
                      "-" if end is None else str(end), "-" if lag is None else str(lag),
                      m.member_id if m else "-", m.host if m else "-", m.client_id if m else "-")
    console.print(table)
    if any(c is None and lag for _, _, c, _, lag, _ in rows):
        console.print("Lag where Committed is \"-\" counts from the partition's earliest "
                      "offset (nothing committed there yet).")


@command.command("reset-offsets")
@click.argument("group")
@click.option("--topic", "topics", multiple=True, required=True,
              help="Topic (all its partitions) or TOPIC:P[,P...]; repeatable.")
@click.option("--to-earliest", "to", flag_value="earliest")
@click.option("--to-latest", "to", flag_value="latest")
@click.option("--to-offset", type=int, default=None, help="This offset in every partition.")
@click.option("--to-datetime", default=None, metavar="ISO-8601",
              help="The first offset at or after this time, e.g. 2026-11-24T10:00:00Z.")
@click.option("--shift-by", type=int, default=None, help="Move the committed offsets by N.")
@click.option("--execute", is_flag=True, help="Apply the plan (without it, only print it).")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def reset_offsets(group, topics, to, to_offset, to_datetime, shift_by, execute, bootstrap,
                  timeout):
    """Reset a group's committed offsets (the group must have no members)."""
    chosen = [x for x in (to, to_offset, to_datetime, shift_by) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, "
                               "--to-datetime, --shift-by")
    with _admin(bootstrap) as admin:
        tps = []
        for spec in topics:
            name, _, parts = spec.partition(":")
            if parts:
                tps += [(name, int(p)) for p in parts.split(",")]
            else:
                d = admin.describe_topics([name], timeout)[name]
                tps += [(name, p.partition) for p in d.partitions]
        first = admin.list_offsets({tp: "earliest" for tp in tps}, timeout)
        last = admin.list_offsets({tp: "latest" for tp in tps}, timeout)
        lo = {tp: first[tp].offset for tp in tps}
        hi = {tp: last[tp].offset for tp in tps}
        if to == "earliest":
            plan = dict(lo)
        elif to == "latest":
            plan = dict(hi)
        elif to_offset is not None:
            plan = {tp: to_offset for tp in tps}
        elif to_datetime is not None:
            when = datetime.fromisoformat(to_datetime.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            found = admin.list_offsets({tp: int(when.timestamp() * 1000) for tp in tps},
                                       timeout)
            plan = {tp: found[tp].offset if found.get(tp) else hi[tp] for tp in tps}
        else:
            current = admin.list_group_offsets(group, tps, timeout)
            plan = {tp: current.get(tp, (lo[tp], ""))[0] + shift_by for tp in tps}
        plan = {tp: min(max(o, lo[tp]), hi[tp]) for tp, o in plan.items()}   # Kafka clamps
        for (t, p), o in sorted(plan.items()):
            click.echo(f"{group}\t{t}\t{p}\t{o}")
        if execute:
            admin.alter_group_offsets(group, plan, timeout)
            click.echo(f"Reset {len(plan)} partition(s) of group {group}.")
        else:
            click.echo("Dry run: nothing changed; add --execute to apply.")


@command.command("delete")
@click.argument("groups", nargs=-1, required=True)
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def delete(groups, bootstrap, timeout):
    """Delete groups without members, with their committed offsets."""
    with _admin(bootstrap) as admin:
        admin.delete_groups(list(groups), timeout)
    for g in groups:
        click.echo(f"Deleted group {g}.")
