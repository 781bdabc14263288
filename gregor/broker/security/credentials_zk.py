"""SCRAM credentials of a cluster, in ZooKeeper exactly where Kafka (ZooKeeper mode) keeps them:

    /config/users/<sanitized user>   {"version":1,"config":{"SCRAM-SHA-256":"salt=..,stored_key=..,server_key=..,iterations=4096"}}
    /config/changes/config_change_<seq>   {"version":2,"entity_path":"users/<sanitized user>"}

so users created by `kafka-configs --zookeeper` (or by `gregor users --zookeeper`) work, and a
change made through any broker reaches every broker: each watches /config/changes and re-reads
the users the new notifications name (within a second of the write). Other keys of a user's
config map (quotas share the znode) are kept as they are: writes change only the SCRAM keys,
with a conditional set that retries when someone else wrote meanwhile.

Authentication reads an in-memory copy (never waits on ZooKeeper); the admin APIs read and
write ZooKeeper itself, on a worker thread (`blocking`).
"""
from __future__ import annotations

import concurrent.futures
import json
import logging
import re
import threading
import time
import urllib.parse

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from ...security.scram import MECHANISMS, ScramCredential
from .credentials import CredentialStoreError, credential_of

log = logging.getLogger("gregor.broker.security.credentials")

USERS = "/config/users"
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
# Kafka's ZkConfigManager deletes notifications older than this (changeExpirationMs).
CHANGE_EXPIRATION_S = 15 * 60
_SEQ = re.compile(rf"^{CHANGE_PREFIX}(\d+)$")


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: URL-encoding as Java's URLEncoder, then '+' -> %20 and
    '*' -> %2A (a znode name is any user name, safely)."""
    return urllib.parse.quote(name, safe=".-_*").replace("~", "%7E").replace("*", "%2A")


def desanitize(name: str) -> str:
    return urllib.parse.unquote_plus(name)


def user_path(user: str) -> str:
    return f"{USERS}/{sanitize(user)}"


def encode_config(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def decode_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    doc = json.loads(data.decode("utf-8"))
    return {str(k): str(v) for k, v in (doc.get("config") or {}).items()}


class ZkCredentialStore:
    blocking = True                  # the admin APIs call it from a worker thread

    def __init__(self, client: KazooClient, *, owns_client: bool = False):
        self.client = client
        self._owns = owns_client
        self._cache: dict[str, dict[str, str]] = {}
        self._last_seq = -1
        self._lock = threading.Lock()
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "gregor-zk-credentials")
        self._watching = False

    @classmethod
    def connect(cls, connect: str, timeout: float = 15.0,
                security=None) -> "ZkCredentialStore":
        """A store with its own ZooKeeper session (`gregor users --zookeeper`), logged in
        and creating znodes with ACLs as `security` (zk_security.ZkSecurity) says."""
        from ..cluster.metadata_store import split_connect
        from ..cluster.zk_security import NONE
        hosts, chroot = split_connect(connect)
        client = (security or NONE).client(hosts)
        try:
            client.start(timeout)
        except Exception as e:
            client.close()
            raise CredentialStoreError(f"cannot reach ZooKeeper at {hosts}: {e}") from None
        if chroot:
            client.ensure_path(chroot)
            client.chroot = chroot
        return cls(client, owns_client=True)

    def close(self) -> None:
        self._watching = False
        self._worker.shutdown(wait=False)
        if self._owns:
            self.client.stop()
            self.client.close()

    # -- the broker's copy --------------------------------------------------------------------

    def start(self) -> None:
        """Read every user, then follow /config/changes (blocking: call from a thread)."""
        self.client.ensure_path(USERS)
        self.client.ensure_path(CHANGES)
        seqs = [self._seq(n) for n in self.client.get_children(CHANGES)]
        self._last_seq = max([s for s in seqs if s is not None], default=-1)
        self._cache = self.all_user_configs()
        log.info("%d SCRAM user(s) in ZooKeeper", len(self._cache))
        self._watching = True
        self.client.ChildrenWatch(CHANGES, self._on_changes)

    def _on_changes(self, children) -> bool:      # kazoo's thread: hand over, never block
        if not self._watching:
            return False
        self._worker.submit(self._apply_changes, list(children))
        return True

    def _apply_changes(self, children: list[str]) -> None:
        with self._lock:
            fresh = sorted(s for s in map(self._seq, children)
                           if s is not None and s > self._last_seq)
            for seq in fresh:
                try:
                    data, _ = self.client.get(f"{CHANGES}/{CHANGE_PREFIX}{seq:010d}")
                    entity = json.loads(data.decode("utf-8")).get("entity_path", "")
                except NoNodeError:
                    continue                      # purged meanwhile
                except (ValueError, AttributeError) as e:
                    log.warning("ignoring malformed config change notification %d: %s", seq, e)
                    continue
                finally:
                    self._last_seq = max(self._last_seq, seq)
                kind, _, rest = str(entity).partition("/")
                if kind == "users" and rest and "/" not in rest:
                    user = desanitize(rest)
                    try:
                        self._cache[user] = self._read(user)
                    except Exception as e:        # the next notification retries
                        log.error("re-reading SCRAM credentials of %r failed: %s", user, e)
                        continue
                    log.info("SCRAM credentials of user %r changed", user)

    @staticmethod
    def _seq(name: str) -> int | None:
        m = _SEQ.match(name)
        return int(m.group(1)) if m else None

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        cfg = self._cache.get(user)
        return None if cfg is None else credential_of(cfg, mechanism)

    def wait_for(self, predicate, timeout: float = 5.0) -> bool:
        """Tests: wait until predicate(self) holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(0.02)
        return predicate(self)

    # -- reads and writes in ZooKeeper ----------------------------------------------------------

    def _read(self, user: str) -> dict[str, str]:
        try:
            data, _ = self.client.get(user_path(user))
        except NoNodeError:
            return {}
        return decode_config(data)

    def user_config(self, user: str) -> dict[str, str]:
        return self._read(user)

    def all_user_configs(self) -> dict[str, dict[str, str]]:
        out = {}
        try:
            names = self.client.get_children(USERS)
        except NoNodeError:
            return {}
        for name in names:
            user = desanitize(name)
            try:
                cfg = self._read(user)
            except ValueError as e:
                log.error("/config/users/%s is not Kafka's config JSON (%s); skipped", name, e)
                continue
            if cfg:
                out[user] = cfg
        return out

    def write_user_configs(self, changes: dict[str, dict[str, str]]) -> None:
        """Set the SCRAM keys of these users to what the maps hold (other keys of each
        user's znode untouched), then notify every broker."""
        for user, cfg in changes.items():
            self._write_one(user, {k: v for k, v in cfg.items() if k in MECHANISMS})
            self._notify(user)
        self._purge_old_notifications()

    def _write_one(self, user: str, scram: dict[str, str]) -> None:
        path = user_path(user)
        for _ in range(20):
            try:
                data, stat = self.client.get(path)
            except NoNodeError:
                try:
                    self.client.create(path, encode_config(scram), makepath=True)
                    return
                except NodeExistsError:
                    continue
            current = decode_config(data)
            new = {k: v for k, v in current.items() if k not in MECHANISMS}
            new.update(scram)
            try:
                self.client.set(path, encode_config(new), version=stat.version)
                return
            except BadVersionError:
                continue                         # written meanwhile: merge again
        raise CredentialStoreError(f"{path} keeps changing; try again")

    def _notify(self, user: str) -> None:
        body = json.dumps({"version": 2, "entity_path": f"users/{sanitize(user)}"},
                          separators=(",", ":")).encode()
        self.client.create(f"{CHANGES}/{CHANGE_PREFIX}", body, sequence=True, makepath=True)

    def _purge_old_notifications(self) -> None:
        now_ms = time.time() * 1000
        try:
            for name in self.client.get_children(CHANGES):
                path = f"{CHANGES}/{name}"
                try:
                    _, stat = self.client.get(path)
                    if now_ms - stat.ctime > CHANGE_EXPIRATION_S * 1000:
                        self.client.delete(path)
                except NoNodeError:
                    pass
        except NoNodeError:
            pass
