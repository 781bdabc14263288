"""`gregor share-groups`: share groups (KIP-932), like Kafka's kafka-share-groups.sh.

    gregor share-groups list
    gregor share-groups describe workers          # members, and per partition the start offset
    gregor share-groups reset-offsets workers --topic jobs --to-earliest [--execute]
    gregor share-groups delete workers

reset-offsets prints the plan and changes nothing without --execute; like delete it needs the
group to have no members.
"""
from __future__ import annotations

import click

from .client_options import bootstrap_option, client_config, with_friendly_errors

_TIMEOUT = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for the broker.")


def _admin(bootstrap: str):
    from ..client.admin import AdminClient
    return AdminClient(client_config(bootstrap))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """List, describe, reset and delete share groups."""


@command.command("list")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def list_(bootstrap, timeout):
    """The share groups: id and state."""
    from ..client.admin_share_groups import list_share_groups
    with _admin(bootstrap) as admin:
        for gid, state in list_share_groups(admin, timeout):
            click.echo(f"{gid}\t{state}")


@command.command("describe")
@click.argument("group")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def describe(group, bootstrap, timeout):
    """State, epochs, members, and the start offset of each share-partition."""
    from ..client.admin_share_groups import describe_share_group, share_group_offsets
    with _admin(bootstrap) as admin:
        d = describe_share_group(admin, group, timeout)
        offsets = share_group_offsets(admin, group, timeout)
        ends = admin.list_offsets({tp: "latest" for tp in offsets}, timeout) if offsets else {}
    click.echo(f"group {d.group_id}: {d.state}, group epoch {d.group_epoch}, "
               f"{len(d.members)} member(s)")
    click.echo("TOPIC\tPARTITION\tSTART-OFFSET\tLOG-END-OFFSET\tLAG")
    for (t, p), start in sorted(offsets.items()):
        end = ends[(t, p)].offset if ends.get((t, p)) else None
        lag = max(0, end - start) if end is not None and start >= 0 else "-"
        click.echo(f"{t}\t{p}\t{start if start >= 0 else '-'}\t"
                   f"{end if end is not None else '-'}\t{lag}")
    for m in d.members:
        parts = ",".join(f"{t}-{p}" for t, p in m.assignment)
        click.echo(f"member {m.member_id}\t{m.client_id}\t{m.client_host}\tepoch "
                   f"{m.member_epoch}\t{parts}")


@command.command("reset-offsets")
@click.argument("group")
@click.option("--topic", required=True, help="The topic whose share-partitions to reset.")
@click.option("--to-earliest", "where", flag_value="earliest", help="To the log start.")
@click.option("--to-latest", "where", flag_value="latest", help="To the log end.")
@click.option("--to-offset", type=int, default=None, help="To this offset.")
@click.option("--execute", is_flag=True, help="Change them (without it: only print the plan).")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def reset_offsets(group, topic, where, to_offset, execute, bootstrap, timeout):
    """Start the group's share-partitions of TOPIC again somewhere else."""
    from ..client.admin_share_groups import alter_share_group_offsets
    if where is None and to_offset is None:
        raise click.UsageError("give --to-earliest, --to-latest or --to-offset N")
    with _admin(bootstrap) as admin:
        parts = admin.describe_topics([topic], timeout)[topic].partitions
        tps = [(topic, p.partition) for p in parts]
        if to_offset is not None:
            plan = {tp: to_offset for tp in tps}
        else:
            got = admin.list_offsets({tp: where for tp in tps}, timeout)
            plan = {tp: got[tp].offset for tp in tps}
        for (t, p), o in sorted(plan.items()):
            click.echo(f"{t}\t{p}\t{o}")
        if execute:
            alter_share_group_offsets(admin, group, plan, timeout)
            click.echo("reset")
        else:
            click.echo("(dry run: add --execute to apply)")


@command.command("delete")
@click.argument("group")
@bootstrap_option
@_TIMEOUT
@with_friendly_errors
def delete(group, bootstrap, timeout):
    """Delete an empty share group and its state."""
    from ..client.admin_share_groups import delete_share_group
    with _admin(bootstrap) as admin:
        delete_share_group(admin, group, timeout)
    click.echo(f"deleted share group {group}")
