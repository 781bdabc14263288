"""`gregor quotas`: describe and alter client quotas, shaped like Kafka's kafka-configs.

    gregor quotas --alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 \\
        --entity-type users --entity-name alice
    gregor quotas --alter --add-config request_percentage=50 \\
        --entity-type users --entity-name alice --entity-type clients --entity-default
    gregor quotas --alter --delete-config producer_byte_rate --user alice
    gregor quotas --alter --add-config connection_creation_rate=10 --ip-defaults
    gregor quotas --describe --entity-type clients          # every client-id entity
    gregor quotas --describe                                # everything

Entity types pair with names in command-line order, as in kafka-configs: `--entity-name N` or
`--entity-default` after each `--entity-type`, or the shorthands --user/--user-defaults,
--client/--client-defaults, --ip/--ip-defaults. Output lines are kafka-configs' ("Quota configs
for user-principal 'alice' are producer_byte_rate=1048576.0").
"""
from __future__ import annotations

import click

from .client_options import bootstrap_option, client_config, with_friendly_errors

_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_SHORT = {"--user": "users", "--client": "clients", "--ip": "ips"}
_SHORT_DEFAULTS = {"--user-defaults": "users", "--client-defaults": "clients",
                   "--ip-defaults": "ips"}
_NO_NAME = object()


class _OrderedCommand(click.Command):
    """Keeps the raw arguments: entity types and names pair by their order."""

    def parse_args(self, ctx, args):
        ctx.meta["gregor.raw_args"] = list(args)
        return super().parse_args(ctx, args)


def entities_from_args(args: list[str]) -> list[tuple[str, object]]:
    """[(entity type, name | None for the default | _NO_NAME)] in command-line order."""
    out: list[list] = []
    pending: list[list] = []           # --entity-type entries waiting for a name
    i = 0
    while i < len(args):
        arg = args[i]
        opt, eq, inline = arg.partition("=")
        takes_value = opt in ("--entity-type", "--entity-name", *_SHORT)
        value = None
        if takes_value:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
        if opt == "--entity-type":
            entry = [value, _NO_NAME]
            out.append(entry)
            pending.append(entry)
        elif opt in ("--entity-name", "--entity-default"):
            if not pending:
                raise click.UsageError(f"{opt} must follow an --entity-type")
            pending.pop(0)[1] = value if opt == "--entity-name" else None
        elif opt in _SHORT:
            out.append([_SHORT[opt], value])
        elif opt in _SHORT_DEFAULTS:
            out.append([_SHORT_DEFAULTS[opt], None])
        i += 1
    for kind, _ in out:
        if kind not in _TYPES:
            raise click.UsageError(f"entity type {kind!r} is not one of users, clients, ips")
    kinds = [k for k, _ in out]
    if len(set(kinds)) != len(kinds):
        raise click.UsageError("each entity type may be given once")
    if "ips" in kinds and len(kinds) > 1:
        raise click.UsageError("an ip entity cannot be combined with users or clients")
    return [(k, n) for k, n in out]


def _shown(entity: dict) -> str:
    parts = []
    for kind, label in (("user", "user-principal"), ("client-id", "client-id"), ("ip", "ip")):
        if kind in entity:
            name = entity[kind]
            parts.append(f"{label} '{name}'" if name is not None else f"the default {label}")
    return ", ".join(parts)


def _parse_add(items) -> dict[str, float]:
    out = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise click.BadParameter(f"{part!r}: expected KEY=VALUE", param_hint="--add-config")
            try:
                out[key.strip()] = float(value)
            except ValueError:
                raise click.BadParameter(f"cannot parse quota configuration value for "
                                         f"{key.strip()}: {value}", param_hint="--add-config")
    return out


@click.command(cls=_OrderedCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--describe", "describe_", is_flag=True, help="Show quota configs.")
@click.option("--alter", is_flag=True, help="Change quota configs.")
@click.option("--entity-type", multiple=True, metavar="users|clients|ips",
              help="Entity type (repeat for a user and a client id).")
@click.option("--entity-name", multiple=True, metavar="NAME",
              help="Name of the preceding --entity-type.")
@click.option("--entity-default", multiple=True, is_flag=True, flag_value=True,
              help="The default entity of the preceding --entity-type.")
@click.option("--user", multiple=True, metavar="NAME", help="Same as --entity-type users "
              "--entity-name NAME.")
@click.option("--user-defaults", is_flag=True, help="The default user.")
@click.option("--client", multiple=True, metavar="ID", help="Same as --entity-type clients "
              "--entity-name ID.")
@click.option("--client-defaults", is_flag=True, help="The default client id.")
@click.option("--ip", multiple=True, metavar="IP", help="Same as --entity-type ips "
              "--entity-name IP.")
@click.option("--ip-defaults", is_flag=True, help="The default IP.")
@click.option("--add-config", multiple=True, metavar="K=V[,K=V]",
              help="Quotas to set: producer_byte_rate, consumer_byte_rate, request_percentage, "
                   "controller_mutation_rate (users/clients), connection_creation_rate (ips).")
@click.option("--delete-config", multiple=True, metavar="K[,K]", help="Quotas to remove.")
@bootstrap_option
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="Seconds to wait for the broker.")
@click.pass_context
@with_friendly_errors
def command(ctx, describe_, alter, add_config, delete_config, bootstrap, timeout, **_entities):
    """Describe or alter client quotas (users, client ids, ips), like kafka-configs."""
    from ..client.admin import AdminClient
    from ..client.admin_quotas import ANY_NAME

    if describe_ == alter:
        raise click.UsageError("give exactly one of --describe and --alter")
    entities = entities_from_args(ctx.meta.get("gregor.raw_args", []))
    with AdminClient(client_config(bootstrap)) as admin:
        if describe_:
            flt = {_TYPES[k]: (ANY_NAME if n is _NO_NAME else n) for k, n in entities}
            for entry in admin.describe_client_quotas(flt, strict=bool(entities),
                                                      timeout=timeout):
                values = ", ".join(f"{k}={v}" for k, v in sorted(entry.values.items()))
                click.echo(f"Quota configs for {_shown(entry.entity)} are {values}")
            return
        if not entities or any(n is _NO_NAME for _, n in entities):
            raise click.UsageError("--alter needs an entity: --entity-type with --entity-name "
                                   "or --entity-default (or --user/--client/--ip ...)")
        adds = _parse_add(add_config)
        deletes = [k.strip() for item in delete_config for k in item.split(",") if k.strip()]
        if not adds and not deletes:
            raise click.UsageError("nothing to alter: give --add-config or --delete-config")
        entity = {_TYPES[k]: n for k, n in entities}
        if deletes:
            current = admin.describe_client_quotas(entity, strict=True, timeout=timeout)
            have = set(current[0].values) if current else set()
            missing = [k for k in deletes if k not in have]
            if missing:
                raise click.ClickException(f"Invalid config(s): {','.join(missing)} (not set "
                                           f"for {_shown(entity)})")
        ops: dict = dict(adds)
        ops.update({k: None for k in deletes})
        admin.alter_client_quotas([(entity, ops)], timeout=timeout)
    kind, name = entities[0]
    if name is None:
        click.echo(f"Completed updating default config for {kind} in the cluster.")
    else:
        click.echo(f"Completed updating config for {kind[:-1]} {name}.")
