"""`gregor acls`: ACLs, shaped like Kafka's kafka-acls.sh.

    gregor acls add --allow-principal User:alice --operation Read --topic orders
    gregor acls add --allow-principal User:bob --producer --topic logs- \
        --resource-pattern-type prefixed
    gregor acls add --allow-principal User:carol --consumer --topic orders --group billing
    gregor acls list [--topic orders] [--principal User:alice]
    gregor acls remove --allow-principal User:alice --operation Read --topic orders --force

Online through a broker (--bootstrap-server, needs ALTER / DESCRIBE on the cluster), or
offline, before any broker runs, on a single node's data directory (--data-dir DIR) or a
cluster's ZooKeeper (--zookeeper HOST:PORT[/chroot], or Kafka's spelling
--authorizer-properties zookeeper.connect=HOST:PORT). Offline changes reach running brokers
too (a broker polls its acls.json; cluster brokers watch ZooKeeper's change notifications).
"""
from __future__ import annotations

import asyncio

import click

from ..protocol.acl import (ANY_FILTER, CLUSTER_NAME, SUPPORTED_OPERATIONS, WILDCARD,
                            AccessControlEntry, AccessControlEntryFilter, AclBinding,
                            AclBindingFilter, AclOperation, AclPermissionType,
                            PatternType, ResourcePattern, ResourcePatternFilter,
                            ResourceType)
from ..broker.security.principal import KafkaPrincipal
from .client_options import bootstrap_option, client_config, with_friendly_errors

Op = AclOperation


def _kafka_pattern(p) -> str:
    """Kafka's ResourcePattern(Filter).toString, which kafka-acls prints."""
    return (f"ResourcePattern(resourceType={p.resource_type.name}, name={p.name}, "
            f"patternType={p.pattern_type.name})")


def _kafka_entry(e: AccessControlEntry) -> str:
    return (f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
            f"permissionType={e.permission.name})")


# -- where the ACLs are ------------------------------------------------------------------------

class _Online:
    def __init__(self, bootstrap: str, timeout: float):
        from ..client.admin import AdminClient
        self.admin = AdminClient(client_config(bootstrap))
        self.timeout = timeout

    def create(self, bindings):
        self.admin.create_acls(bindings, self.timeout)

    def describe(self, flt):
        return self.admin.describe_acls(flt, self.timeout)

    def delete(self, filters):
        return self.admin.delete_acls(filters, self.timeout)

    def close(self):
        self.admin.close()


class _Offline:
    """The store a broker would use, edited directly (ZooKeeper's or the data directory's)."""

    def __init__(self, data_dir: str | None, zookeeper: str | None, zk_security=None):
        self.data_dir = data_dir
        self.zookeeper = zookeeper
        self.zk_security = zk_security      # the brokers' ZooKeeper login and znode ACLs

    async def _run(self, work):
        from kazoo.exceptions import NoAuthError

        from ..broker.security.acl_store import AclService, FileAclStore
        from ..broker.security.authorizer import AclAuthorizer
        zk = None
        if self.zookeeper:
            from ..broker.cluster.metadata_store import MetadataStore
            from ..broker.security.acl_store_zk import ZkAclStore
            zk = MetadataStore(self.zookeeper, session_timeout_ms=10000,
                               security=self.zk_security)
            await zk.start()
            store = ZkAclStore(zk)
        else:
            store = FileAclStore(self.data_dir)
        service = AclService(AclAuthorizer(), store)
        try:
            service.authorizer.replace_all(await store.load())
            return await work(service)
        except NoAuthError:
            raise click.ClickException(
                "ZooKeeper refused the change: this cluster's znodes are protected "
                "(zookeeper.set.acl); give --zk-config with the brokers' ZooKeeper login "
                "(gregor.zookeeper.jaas.file), e.g. the brokers' properties file") from None
        finally:
            await service.close()
            if zk is not None:
                await zk.close()

    def create(self, bindings):
        results = asyncio.run(self._run(lambda s: s.create(bindings)))
        for b, r in zip(bindings, results):
            if r is not None:
                raise click.ClickException(f"cannot add {_kafka_entry(b.entry)} to "
                                           f"{_kafka_pattern(b.pattern)}: {r[1]}")

    def describe(self, flt):
        async def work(s):
            return s.describe(flt)
        return asyncio.run(self._run(work))

    def delete(self, filters):
        results = asyncio.run(self._run(lambda s: s.delete(filters)))
        for err, _ in results:
            if err is not None:
                raise click.ClickException(f"cannot remove ACLs: {err[1]}")
        return [removed for _, removed in results]

    def close(self):
        pass


_ZK_PROPERTIES = ("zookeeper.set.acl", "gregor.zookeeper.jaas.file",
                  "gregor.zookeeper.jaas.config")


def _target(bootstrap, data_dir, zookeeper, authorizer_properties, timeout, zk_config=None):
    zk_props: dict[str, str] = {}
    if zk_config:
        from ..broker.config import parse_properties
        try:
            with open(zk_config, encoding="utf-8") as f:
                zk_props.update((k, v) for k, v in parse_properties(f.read()).items()
                                if k in _ZK_PROPERTIES)
        except OSError as e:
            raise click.BadParameter(f"cannot read {zk_config}: {e.strerror}",
                                     param_hint="--zk-config") from None
    for prop in authorizer_properties:
        key, _, value = prop.partition("=")
        key = key.strip()
        if key == "zookeeper.connect":
            zookeeper = value.strip()
        elif key in _ZK_PROPERTIES:
            zk_props[key] = value.strip()
        else:
            raise click.BadParameter(f"{prop!r}: only zookeeper.connect=HOST:PORT and the "
                                     f"ZooKeeper login ({', '.join(_ZK_PROPERTIES)}) are "
                                     "understood", param_hint="--authorizer-properties")
    if data_dir and zookeeper:
        raise click.UsageError("give --data-dir (a single node) or --zookeeper (a cluster), "
                               "not both")
    if data_dir or zookeeper:
        return _Offline(data_dir, zookeeper, _zk_security(zk_props) if zookeeper else None)
    return _Online(bootstrap, timeout)


def _zk_security(props: dict):
    from ..broker.cluster.zk_security import zk_security
    from ..broker.config import BrokerConfig, ConfigError
    try:
        return zk_security(BrokerConfig(props))
    except ConfigError as e:
        raise click.UsageError(str(e)) from None


# -- what the options mean ---------------------------------------------------------------------

def _resource_filters(o, pattern_type: PatternType, need: bool) -> list[ResourcePatternFilter]:
    out = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in o["topic"]]
    if o["cluster"] or (o.get("idempotent") and pattern_type == PatternType.LITERAL):
        out.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    out += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in o["group"]]
    out += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, x, pattern_type)
            for x in o["transactional_id"]]
    if need and not out:
        raise click.UsageError("You must provide at least one resource: --topic <topic> or "
                               "--cluster or --group <group> or --transactional-id <id>")
    return list(dict.fromkeys(out))


def _principals(values) -> list[str]:
    out = []
    for v in values:
        try:
            out.append(str(KafkaPrincipal.parse(v.strip())))
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return out


def _entries(o, operations) -> set[AccessControlEntry]:
    out = set()
    for principals, hosts, permission in (
            (o["allow_principal"], o["allow_host"], AclPermissionType.ALLOW),
            (o["deny_principal"], o["deny_host"], AclPermissionType.DENY)):
        principals = _principals(principals)
        hosts = [h.strip() for h in hosts] or ([WILDCARD] if principals else [])
        for p in principals:
            for h in hosts:
                for op in operations:
                    out.add(AccessControlEntry(p, h, op, permission))
    return out


def _operations(values) -> list[AclOperation]:
    try:
        return [AclOperation.parse(v) for v in values or ("All",)]
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--operation") from None


def _filter_to_entries(o, pattern_type, need=True) -> dict[ResourcePatternFilter, set]:
    """kafka-acls' getResourceFilterToAcls: the entries to add/remove per resource filter;
    --producer / --consumer expand to the operations those clients need."""
    resources = _resource_filters(o, pattern_type, need)
    out: dict[ResourcePatternFilter, set] = {}
    if not o["producer"] and not o["consumer"]:
        entries = _entries(o, _operations(o["operation"]))
        out = {r: set(entries) for r in resources}
    if o["producer"]:
        for r in resources:
            if r.resource_type == ResourceType.TOPIC:
                out.setdefault(r, set()).update(_entries(o, (Op.WRITE, Op.DESCRIBE, Op.CREATE)))
            elif r.resource_type == ResourceType.TRANSACTIONAL_ID:
                out.setdefault(r, set()).update(_entries(o, (Op.WRITE, Op.DESCRIBE)))
            elif r.resource_type == ResourceType.CLUSTER and o["idempotent"]:
                out.setdefault(r, set()).update(_entries(o, (Op.IDEMPOTENT_WRITE,)))
    if o["consumer"]:
        if not o["group"]:
            raise click.UsageError("--consumer needs --group (and --topic)")
        for r in resources:
            if r.resource_type == ResourceType.TOPIC:
                out.setdefault(r, set()).update(_entries(o, (Op.READ, Op.DESCRIBE)))
            elif r.resource_type == ResourceType.GROUP:
                out.setdefault(r, set()).update(_entries(o, (Op.READ,)))
    for r, entries in out.items():
        valid = set(SUPPORTED_OPERATIONS[r.resource_type]) | {Op.ALL}
        bad = {e.operation for e in entries} - valid
        if bad:
            raise click.UsageError(
                f"ResourceType {r.resource_type.name} only supports operations "
                f"{', '.join(sorted(op.pascal for op in valid))}")
    return out


def _pattern_type(value: str) -> PatternType:
    return PatternType.parse(value)


# -- the commands ------------------------------------------------------------------------------

_TIMEOUT = click.option("--timeout", type=float, default=30.0, show_default=True,
                        help="Seconds to wait for the broker.")


def _common(fn):
    opts = [
        click.option("--topic", multiple=True, help="Topic (repeatable)."),
        click.option("--group", multiple=True, help="Consumer group (repeatable)."),
        click.option("--cluster", is_flag=True, help="The cluster resource (kafka-cluster)."),
        click.option("--transactional-id", "transactional_id", multiple=True,
                     help="Transactional id (repeatable)."),
        click.option("--resource-pattern-type", "pattern_type", default="literal",
                     show_default=True,
                     type=click.Choice(["literal", "prefixed", "any", "match"],
                                       case_sensitive=False),
                     help="literal or prefixed (add); list/remove also take any (exact name, "
                          "any pattern type) and match (every pattern applying to the name)."),
        click.option("--data-dir", help="Offline: the ACLs of a single node's data directory."),
        click.option("--zookeeper", help="Offline: a cluster's ZooKeeper, HOST:PORT[/chroot]."),
        click.option("--authorizer-properties", "authorizer_properties", multiple=True,
                     help="Kafka's spelling of --zookeeper: zookeeper.connect=HOST:PORT "
                          "(also zookeeper.set.acl=true, gregor.zookeeper.jaas.file=F)."),
        click.option("--zk-config", "zk_config", default=None,
                     type=click.Path(exists=True, dir_okay=False),
                     help="With --zookeeper: the brokers' ZooKeeper login and ACL settings "
                          "(zookeeper.set.acl, gregor.zookeeper.jaas.file), e.g. the brokers' "
                          "properties file."),
        bootstrap_option, _TIMEOUT,
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _principal_opts(fn):
    opts = [
        click.option("--allow-principal", "allow_principal", multiple=True,
                     help="Principal allowed, e.g. User:alice or User:* (repeatable)."),
        click.option("--deny-principal", "deny_principal", multiple=True,
                     help="Principal denied (repeatable)."),
        click.option("--allow-host", "allow_host", multiple=True,
                     help="IP address the allowed principals connect from (default *)."),
        click.option("--deny-host", "deny_host", multiple=True,
                     help="IP address the denied principals connect from (default *)."),
        click.option("--operation", multiple=True,
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                          "DescribeConfigs, AlterConfigs, IdempotentWrite or All "
                          "(repeatable; default All)."),
        click.option("--producer", is_flag=True,
                     help="Convenience: WRITE, DESCRIBE, CREATE on --topic; WRITE, DESCRIBE on "
                          "--transactional-id; with --idempotent IDEMPOTENT_WRITE on the "
                          "cluster."),
        click.option("--consumer", is_flag=True,
                     help="Convenience: READ, DESCRIBE on --topic; READ on --group."),
        click.option("--idempotent", is_flag=True, help="With --producer: IDEMPOTENT_WRITE."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Add, list and remove ACLs (as kafka-acls)."""


def _print(bindings) -> None:
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        grouped.setdefault(b.pattern, []).append(b.entry)
    for pattern, entries in grouped.items():
        click.echo(f"Current ACLs for resource `{_kafka_pattern(pattern)}`: ")
        for e in entries:
            click.echo(f" \t{_kafka_entry(e)}")
        click.echo("")


@command.command("add")
@_principal_opts
@_common
@with_friendly_errors
def add(**o):
    """Add ACLs: one per principal x host x operation x resource."""
    pattern_type = _pattern_type(o["pattern_type"])
    if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise click.UsageError(f"A '--resource-pattern-type' value of '{pattern_type.name}' "
                               "is not valid when adding acls.")
    plan = _filter_to_entries(o, pattern_type)
    if any(not entries for entries in plan.values()):
        raise click.UsageError("You must specify one of: --allow-principal, --deny-principal "
                               "when trying to add ACLs.")
    target = _target(o["bootstrap"], o["data_dir"], o["zookeeper"],
                     o["authorizer_properties"], o["timeout"], o["zk_config"])
    try:
        for r, entries in plan.items():
            pattern = ResourcePattern(r.resource_type, r.name, r.pattern_type)
            click.echo(f"Adding ACLs for resource `{_kafka_pattern(pattern)}`: ")
            for e in sorted(entries, key=str):
                click.echo(f" \t{_kafka_entry(e)}")
            click.echo("")
            target.create([AclBinding(pattern, e) for e in sorted(entries, key=str)])
        _print(target.describe(ANY_FILTER if not plan else _union_filter(plan)))
    finally:
        target.close()


def _union_filter(plan) -> AclBindingFilter:
    """What to show after adding: the one resource when there is one, else everything."""
    if len(plan) == 1:
        r = next(iter(plan))
        return AclBindingFilter(r, ANY_FILTER.entry)
    return ANY_FILTER


@command.command("list")
@click.option("--principal", "principals", multiple=True,
              help="Only ACLs of this principal (repeatable).")
@_common
@with_friendly_errors
def list_(principals, **o):
    """List ACLs (all, or those of the given resources)."""
    resources = _resource_filters(o, _pattern_type(o["pattern_type"]), need=False)
    target = _target(o["bootstrap"], o["data_dir"], o["zookeeper"],
                     o["authorizer_properties"], o["timeout"], o["zk_config"])
    try:
        found = []
        for r in resources or [None]:
            flt = ANY_FILTER if r is None else AclBindingFilter(r, ANY_FILTER.entry)
            found += [b for b in target.describe(flt) if b not in found]
    finally:
        target.close()
    wanted = _principals(principals)
    if not wanted:
        _print(found)
    for p in wanted:
        click.echo(f"ACLs for principal `{p}`")
        _print([b for b in found if b.entry.principal == p])


@command.command("remove")
@_principal_opts
@click.option("--force", is_flag=True, help="Do not ask for confirmation.")
@_common
@with_friendly_errors
def remove(force, **o):
    """Remove ACLs: the given entries, or every ACL of the resources when no principal is
    given."""
    plan = _filter_to_entries(o, _pattern_type(o["pattern_type"]))
    target = _target(o["bootstrap"], o["data_dir"], o["zookeeper"],
                     o["authorizer_properties"], o["timeout"], o["zk_config"])
    try:
        for r, entries in plan.items():
            if not entries:
                question = (f"Are you sure you want to delete all ACLs for resource filter "
                            f"`{_kafka_pattern(r)}`?")
                filters = [AclBindingFilter(r, ANY_FILTER.entry)]
            else:
                question = ("Are you sure you want to remove ACLs: "
                            + "".join(f"\n \t{_kafka_entry(e)}" for e in sorted(entries, key=str))
                            + f"\n from resource filter `{_kafka_pattern(r)}`?")
                filters = [AclBindingFilter(r, AccessControlEntryFilter(
                    e.principal, e.host, e.operation, e.permission))
                    for e in sorted(entries, key=str)]
            if not force and not click.confirm(question):
                continue
            removed = target.delete(filters)
            count = sum(len(x) for x in removed)
            click.echo(f"Removed {count} ACL(s) from `{_kafka_pattern(r)}`.")
    finally:
        target.close()
