"""ZooKeeper authentication and znode ACLs, as Kafka's ZooKeeper mode secures them.

    zookeeper.set.acl=true
    gregor.zookeeper.jaas.file=/etc/gregor/zookeeper-jaas.conf      # its `Client` section, or
    gregor.zookeeper.jaas.config=org.apache.zookeeper.server.auth.DigestLoginModule required \
        username="gregor" password="...";

The brokers log in to ZooKeeper with the username and password of that JAAS entry, using
ZooKeeper's built-in `digest` scheme (addAuth "digest", "user:password"), which every ZooKeeper
server accepts without any server configuration. Kafka reads the same JAAS `Client` section but
logs in with SASL/DIGEST-MD5, which needs a `Server` section and an authProvider on the
ZooKeeper side; the digest scheme gives the same protection (only that user may change the
znodes) without touching ZooKeeper's configuration, and kazoo speaks it natively.

With `zookeeper.set.acl=true` every znode a broker or a gregor tool creates gets Kafka's ACLs
(ZkData.defaultAcls): ALL for its creator (the authenticated user) plus READ for everyone,
except under the sensitive roots (`/config/users`, which holds SCRAM credentials,
`/config/brokers` and `/delegation_token/tokens`), which only the creator may read. Znodes that
already exist keep the ACLs they have (Kafka's zookeeper-security-migration tool changes those;
gregor has none: start a secured cluster on a fresh chroot). ZooKeeper checks ACLs per znode,
so a client without the credentials can still read the cluster's layout but can change nothing,
and cannot read credentials.
"""
from __future__ import annotations

import logging
from pathlib import Path

from kazoo.client import KazooClient, TransactionRequest
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from ...security.jaas import JaasError, parse_jaas_file, single_entry
from ..config import ConfigError

log = logging.getLogger("gregor.broker.cluster.store")

# Kafka's ZkData.SensitiveRootPaths: nobody but the brokers may even read these.
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
# Kafka's old consumer path stays open: old consumers wrote under it themselves.
OPEN_PATHS = ("/consumers",)
JAAS_SECTION = "Client"


def sensitive(path: str) -> bool:
    return any(path.startswith(root) for root in SENSITIVE_ROOTS)


def default_acls(secure: bool, path: str) -> list:
    """Kafka's ZkData.defaultAcls for a path (as the client sees it, inside the chroot)."""
    if not secure or path in OPEN_PATHS:
        return list(OPEN_ACL_UNSAFE)
    if sensitive(path):
        return list(CREATOR_ALL_ACL)
    return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)


class ZkSecurity:
    """How a ZooKeeper client of the cluster logs in and which ACLs its creates carry."""

    __slots__ = ("set_acl", "username", "_password")

    def __init__(self, set_acl: bool = False, username: str | None = None,
                 password: str | None = None):
        self.set_acl = set_acl
        self.username = username
        self._password = password

    def __repr__(self) -> str:
        return f"ZkSecurity(set_acl={self.set_acl}, user={self.username!r})"

    @property
    def authenticated(self) -> bool:
        return self.username is not None

    def auth_data(self) -> list[tuple[str, str]]:
        if self.username is None:
            return []
        return [("digest", f"{self.username}:{self._password}")]

    def acl_for(self, path: str) -> list | None:
        """The ACL of a znode created at path; None: ZooKeeper's open default."""
        return default_acls(True, path) if self.set_acl else None

    def client(self, hosts: str, **kwargs) -> KazooClient:
        """A kazoo client that logs in with these credentials and gives every znode it
        creates its ACL (unless the call names one)."""
        return SecuredKazooClient(hosts=hosts, auth_data=self.auth_data() or None,
                                  acl_policy=self.acl_for if self.set_acl else None, **kwargs)


NONE = ZkSecurity()


def zk_security(config) -> ZkSecurity:
    """From the broker settings (or a tool's --zk-config properties); ConfigError when
    zookeeper.set.acl is on without credentials (Kafka refuses that too), or the JAAS entry
    has no username / password."""
    set_acl = _bool(config.get("zookeeper.set.acl"))
    inline = config.get("gregor.zookeeper.jaas.config")
    path = config.get("gregor.zookeeper.jaas.file")
    username = password = None
    if inline or path:
        username, password = _credentials(inline, path)
    if set_acl and username is None:
        raise ConfigError(
            "zookeeper.set.acl=true needs the brokers to log in to ZooKeeper: set "
            "gregor.zookeeper.jaas.file to a JAAS file whose Client section reads "
            "org.apache.zookeeper.server.auth.DigestLoginModule required username=\"...\" "
            "password=\"...\"; (or gregor.zookeeper.jaas.config to that entry), the same on "
            "every broker")
    return ZkSecurity(set_acl, username, password)


def _bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _credentials(inline, path) -> tuple[str, str]:
    if inline and path:
        raise ConfigError("set gregor.zookeeper.jaas.config or gregor.zookeeper.jaas.file, "
                          "not both")
    where = "gregor.zookeeper.jaas.config"
    try:
        if inline:
            entry = single_entry(str(inline))
        else:
            where = f"gregor.zookeeper.jaas.file {path}"
            try:
                text = Path(str(path)).read_text()
            except OSError as e:
                raise ConfigError(f"{where}: cannot read it ({e.strerror or e})") from None
            sections = parse_jaas_file(text)
            if JAAS_SECTION not in sections:
                raise ConfigError(f"{where} has no {JAAS_SECTION} section (it has "
                                  f"{', '.join(sections) or 'none'})")
            entries = sections[JAAS_SECTION]
            if len(entries) != 1:
                raise ConfigError(f"{where}: the {JAAS_SECTION} section must hold one login "
                                  f"module, found {len(entries)}")
            entry = entries[0]
    except JaasError as e:
        raise ConfigError(f"{where}: {e}") from None
    user, password = entry.options.get("username"), entry.options.get("password")
    if not user or password is None:
        raise ConfigError(f"{where}: the ZooKeeper login needs username=\"...\" and "
                          "password=\"...\" options")
    if ":" in user:
        raise ConfigError(f"{where}: a ZooKeeper digest user name cannot contain ':'")
    return user, password


class SecuredKazooClient(KazooClient):
    """KazooClient whose creates (plain, ensure_path and in transactions) get the ACL the
    policy gives their path when the caller names none: kazoo takes one default ACL for every
    znode, while Kafka's rules differ by path (credentials must not be world-readable). The
    parents a `makepath=True` create adds take the child's ACL (kazoo passes it down); the
    roots gregor writes under exist from the first broker's start (znodes.PERSISTENT_PATHS)."""

    def __init__(self, *args, acl_policy=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.acl_policy = acl_policy

    def create_async(self, path, value=b"", acl=None, *args, **kwargs):
        if acl is None and self.acl_policy is not None:
            acl = self.acl_policy(path)
        return super().create_async(path, value, acl, *args, **kwargs)

    def transaction(self):
        return _SecuredTransaction(self)


class _SecuredTransaction(TransactionRequest):
    def create(self, path, value=b"", acl=None, ephemeral=False, sequence=False):
        if acl is None and self.client.acl_policy is not None:
            acl = self.client.acl_policy(path)
        return super().create(path, value, acl, ephemeral, sequence)
