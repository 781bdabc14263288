"""`gregor users`: SCRAM users, shaped like `kafka-configs --entity-type users`.

    gregor users add alice --password-file alice.pw --data-dir ./data         # before the broker runs
    gregor users add alice --zookeeper 127.0.0.1:2181/gregor                   # a cluster, offline
    gregor users add alice --zookeeper ... --zk-config server.properties       # protected znodes
    gregor users add alice -b localhost:9093 --command-config admin.properties # online (KIP-554)
    gregor users list [NAME ...] (same targets)
    gregor users remove alice [--mechanism SCRAM-SHA-512]

The password comes from --password-file (its first line), a prompt, or --password (visible to
other users of the machine: a warning says so). Each mechanism gets its own credential; by
default both SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka needs one per mechanism a client may use).
Offline, the command writes what the broker reads (the data directory's entity config file,
or ZooKeeper's /config/users/<user> with a change notification); online, it salts the password
here and sends only the salted form (AlterUserScramCredentials).
"""
from __future__ import annotations

import contextlib
import sys

import click

from .client_options import DEFAULT_BOOTSTRAP, bootstrap_option, client_config, friendly_errors

_MECHS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _target_options(fn):
    fn = click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]", default=None,
                      help="Write to a cluster's ZooKeeper directly (brokers may be down).")(fn)
    fn = click.option("--zk-config", metavar="FILE", default=None,
                      type=click.Path(exists=True, dir_okay=False),
                      help="With --zookeeper: the brokers' ZooKeeper login and ACL settings "
                           "(zookeeper.set.acl, gregor.zookeeper.jaas.file), e.g. the "
                           "brokers' properties file.")(fn)
    fn = click.option("--data-dir", type=click.Path(file_okay=False), default=None,
                      help="Write to a single node's data directory (before or while the "
                           "broker runs).")(fn)
    return bootstrap_option(fn)


@contextlib.contextmanager
def _zookeeper_refusals():
    """ZooKeeper's refusals as a message saying what to give."""
    from kazoo.exceptions import NoAuthError

    from ..broker.security.credentials import CredentialStoreError
    try:
        yield
    except CredentialStoreError as e:
        hint = "; give --zk-config with it, e.g. the brokers' properties file" \
            if "zookeeper.set.acl" in str(e) else ""
        raise click.ClickException(f"{e}{hint}") from None
    except NoAuthError:
        raise click.ClickException(
            "ZooKeeper refused the change: this cluster's znodes are protected "
            "(zookeeper.set.acl); give --zk-config with the brokers' ZooKeeper login "
            "(gregor.zookeeper.jaas.file), e.g. the brokers' properties file") from None


def _zk_security(path):
    """ZooKeeper login and ACLs from a properties file (none without one)."""
    from ..broker.cluster.zk_security import NONE, zk_security
    from ..broker.config import BrokerConfig, ConfigError, parse_properties
    if not path:
        return NONE
    try:
        with open(path, encoding="utf-8") as f:
            return zk_security(BrokerConfig(parse_properties(f.read())))
    except ConfigError as e:
        raise click.UsageError(f"--zk-config {path}: {e}") from None


class _Target:
    """Where users live: a store written directly (data dir, ZooKeeper) or a broker."""

    def __init__(self, data_dir, zookeeper, bootstrap, zk_config=None):
        given = [x for x in (data_dir, zookeeper) if x]
        if len(given) > 1:
            raise click.UsageError("give one of --data-dir, --zookeeper or --bootstrap-server")
        self.store = None
        self.admin = None
        if data_dir:
            from ..broker.security.credentials import FileCredentialStore
            self.store = FileCredentialStore(data_dir)
        elif zookeeper:
            from ..broker.security.credentials_zk import ZkCredentials
            self.store = ZkCredentials.connect(zookeeper, security=_zk_security(zk_config))
        else:
            from ..client.admin import AdminClient
            self.admin = AdminClient(client_config(bootstrap or DEFAULT_BOOTSTRAP))

    def close(self):
        if self.admin is not None:
            self.admin.close()
        if self.store is not None and hasattr(self.store, "close"):
            self.store.close()

    def alter(self, deletions, upsertions) -> None:
        """deletions [(user, mech)], upsertions [(user, mech, password, iterations)]."""
        if self.admin is not None:
            from ..client.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion
            self.admin.alter_user_scram_credentials(
                [UserScramCredentialDeletion(u, m) for u, m in deletions]
                + [UserScramCredentialUpsertion(u, m, pw, it) for u, m, pw, it in upsertions])
            return
        from ..broker.security import scram_admin
        from ..protocol.errors import error_for_code
        from ..security.scram import MECHANISMS, random_salt
        ups = []
        for user, mech, password, iterations in upsertions:
            m, salt = MECHANISMS[mech], random_salt()
            ups.append({"name": user, "mechanism": m.type_code, "iterations": iterations,
                        "salt": salt, "salted_password": m.salted_password(password, salt,
                                                                           iterations)})
        dels = [{"name": u, "mechanism": MECHANISMS[m].type_code} for u, m in deletions]
        results, changes = scram_admin.plan_alter(self.store, dels, ups)
        for r in results:
            if r["error_code"]:
                raise error_for_code(r["error_code"], f"user {r['user']!r}: {r['error_message']}")
        if changes:
            self.store.write_user_configs(changes)

    def describe(self, users) -> dict[str, list[tuple[str, int]]]:
        if self.admin is not None:
            got = self.admin.describe_user_scram_credentials(users or None)
            return {u: [(i.mechanism, i.iterations) for i in infos] for u, infos in got.items()}
        from ..broker.security import scram_admin
        from ..protocol.errors import error_for_code
        from ..security.scram import BY_TYPE
        body = scram_admin.describe(self.store, list(users) or None)
        out = {}
        for r in body["results"]:
            if r["error_code"]:
                raise error_for_code(r["error_code"], r["error_message"])
            out[r["user"]] = [(BY_TYPE[c["mechanism"]].name, c["iterations"])
                              for c in r["credential_infos"]]
        return out


def _password(password, password_file) -> str:
    if password is not None and password_file is not None:
        raise click.UsageError("give --password or --password-file, not both")
    if password_file is not None:
        with open(password_file, encoding="utf-8") as f:
            text = f.readline().rstrip("\r\n")
        if not text:
            raise click.UsageError(f"{password_file} is empty; its first line is the password")
        return text
    if password is not None:
        click.echo("warning: a password given with --password is visible to other users of "
                   "this machine (ps, shell history); prefer --password-file or the prompt",
                   err=True)
        return password
    if not sys.stdin.isatty():
        raise click.UsageError("no password: give --password-file FILE (or run in a terminal "
                               "to be prompted)")
    return click.prompt("Password", hide_input=True, confirmation_prompt=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Add, list and remove SCRAM users (like kafka-configs --entity-type users)."""


@command.command("add")
@click.argument("name")
@click.option("--mechanism", "-m", "mechanisms", multiple=True,
              type=click.Choice(_MECHS, case_sensitive=False),
              help="SCRAM mechanism (repeatable; default: both).")
@click.option("--iterations", type=click.IntRange(4096, 16384), default=4096, show_default=True)
@click.option("--password-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="File whose first line is the password.")
@click.option("--password", default=None, help="The password itself (visible to others: "
                                               "prefer --password-file).")
@_target_options
def add(name, mechanisms, iterations, password_file, password, data_dir, zookeeper, zk_config,
        bootstrap):
    """Create a user, or set a new password for one."""
    pw = _password(password, password_file)
    mechs = [m.upper() for m in mechanisms] or list(_MECHS)
    with friendly_errors(), _zookeeper_refusals():
        target = _Target(data_dir, zookeeper, bootstrap, zk_config)
        try:
            target.alter([], [(name, m, pw, iterations) for m in mechs])
        finally:
            target.close()
    click.echo(f"Set {', '.join(mechs)} credentials of user {name!r} "
               f"(iterations={iterations}).")


@command.command("list")
@click.argument("names", nargs=-1)
@_target_options
def list_(names, data_dir, zookeeper, zk_config, bootstrap):
    """List users and their SCRAM mechanisms (never salts or keys)."""
    with friendly_errors(), _zookeeper_refusals():
        target = _Target(data_dir, zookeeper, bootstrap, zk_config)
        try:
            users = target.describe(names)
        finally:
            target.close()
    for user, infos in sorted(users.items()):
        creds = ", ".join(f"{m}=iterations={i}" for m, i in infos)
        click.echo(f"SCRAM credential configs for user-principal '{user}' are {creds}")


@command.command("remove")
@click.argument("name")
@click.option("--mechanism", "-m", "mechanisms", multiple=True,
              type=click.Choice(_MECHS, case_sensitive=False),
              help="Remove only this mechanism's credential (repeatable; default: all).")
@_target_options
def remove(name, mechanisms, data_dir, zookeeper, zk_config, bootstrap):
    """Remove a user's SCRAM credentials."""
    with friendly_errors(), _zookeeper_refusals():
        target = _Target(data_dir, zookeeper, bootstrap, zk_config)
        try:
            mechs = [m.upper() for m in mechanisms] or \
                [m for m, _ in target.describe([name]).get(name, [])]
            target.alter([(name, m) for m in mechs], [])
        finally:
            target.close()
    click.echo(f"Removed {', '.join(mechs)} credentials of user {name!r}.")
