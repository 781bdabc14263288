"""The cluster backend of the entity config store: Kafka's /config znodes and change notices.

Kafka's ZooKeeper layout (ZkData ConfigEntityZNode, ConfigEntityChangeNotificationZNode):

    /config/users/<u>                   {"version":1,"config":{"producer_byte_rate":"1024",...}}
    /config/users/<u>/clients/<c>       (also <default> on either side)
    /config/clients/<c>
    /config/ips/<ip>
    /config/changes/config_change_<seq> {"version":2,"entity_path":"users/<u>/clients/<c>"}

A write sets one entity's znode (conditioned on the version read, retried on a race, so two
brokers changing different keys of one user never lose either change: a user's quotas and
SCRAM credentials share the znode), then adds a sequential change notice. Every broker watches
/config/changes, and for each notice newer than the last it handled re-reads that entity; a
change made on one broker (or by Kafka's kafka-configs --zookeeper, which writes the same
znodes and notices, including version 1 notices {"entity_type","entity_name"}) is in force on
all of them within milliseconds. Notices older than 15 minutes are deleted, as Kafka does.

This module and metadata_store.py are the ones that talk to ZooKeeper; it uses the metadata
store's kazoo client and its loop hand-over.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from ..entity_configs.names import CLIENTS, ENTITY_TYPES, USERS
from ..entity_configs.store import EntityConfigStore, merged

log = logging.getLogger("gregor.broker.cluster.entity_configs")

CONFIG = "/config"
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
NOTICE_EXPIRATION_MS = 15 * 60 * 1000       # Kafka's ZkNodeChangeNotificationListener
PURGE_INTERVAL_S = 60.0                      # how often old notices are looked for


def encode_config(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def decode_config(data: bytes | None) -> dict[str, str]:
    """An entity znode's map; {} for an empty znode (a parent made by a recursive create)."""
    if not data:
        return {}
    doc = json.loads(data)
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise ValueError("an entity config znode has no 'config' object")
    return {str(k): str(v) for k, v in config.items()}


def encode_notice(path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": path}, separators=(",", ":")).encode()


def decode_notice(data: bytes) -> str:
    """The entity path a change notice names (version 2, or version 1's type and name)."""
    doc = json.loads(data)
    if doc.get("version") == 1:
        return f"{doc['entity_type']}/{doc['entity_name']}"
    return str(doc["entity_path"])


def notice_seq(name: str) -> int:
    return int(name[len(CHANGE_PREFIX):]) if name.startswith(CHANGE_PREFIX) else -1


class ZkEntityConfigStore(EntityConfigStore):
    def __init__(self, metadata_store):
        super().__init__()
        self.zk = metadata_store
        self.last_seq = -1
        self._dirty = False
        self._processing: asyncio.Task | None = None
        self._watch: ChildrenWatch | None = None
        self._last_purge = 0.0
        self._closed = False

    @property
    def _client(self):
        return self.zk.client

    async def start(self) -> None:
        """Read every entity, then follow the change notices."""
        c, wait = self._client, self.zk._wait
        for path in (CHANGES,) + tuple(f"{CONFIG}/{t}" for t in ENTITY_TYPES):
            await wait(c.ensure_path_async(path))
        # notices present now are covered by the full read that follows
        names = await wait(c.get_children_async(CHANGES))
        self.last_seq = max((notice_seq(n) for n in names), default=-1)
        self._replace_all(await self._read_all())
        self._watch = ChildrenWatch(c, CHANGES, self._on_children)

    def _on_children(self, _children) -> bool:           # kazoo's thread
        if self._closed:
            return False                                 # ends kazoo's watch
        self.zk.loop.call_soon_threadsafe(self._notified)
        return True

    async def _read_all(self) -> dict[str, dict[str, str]]:
        c, wait = self._client, self.zk._wait
        paths: list[str] = []
        for kind in ENTITY_TYPES:
            for name in await wait(c.get_children_async(f"{CONFIG}/{kind}")):
                paths.append(f"{kind}/{name}")
                if kind == USERS:
                    try:
                        clients = await wait(c.get_children_async(
                            f"{CONFIG}/{USERS}/{name}/{CLIENTS}"))
                    except NoNodeError:
                        continue
                    paths.extend(f"{USERS}/{name}/{CLIENTS}/{cl}" for cl in clients)
        out = {}
        for path in paths:
            config = await self._read(path)
            if config:
                out[path] = config
        return out

    async def _read(self, path: str) -> dict[str, str]:
        try:
            data, _ = await self.zk._wait(self._client.get_async(f"{CONFIG}/{path}"))
        except NoNodeError:
            return {}
        try:
            return decode_config(data)
        except (ValueError, AttributeError) as e:
            log.error("cannot read %s/%s (%s); treating it as empty", CONFIG, path, e)
            return {}

    # -- following changes ------------------------------------------------------------------

    def _notified(self) -> None:
        """/config/changes changed (kazoo re-arms the watch, also after a new session)."""
        self._dirty = True
        if self._processing is None or self._processing.done():
            self._processing = self.zk.loop.create_task(self._process())

    async def _process(self) -> None:
        while self._dirty and not self._closed:
            self._dirty = False
            try:
                await self._process_new()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                # disconnected: the watch fires again on reconnection; else retry soon
                log.warning("reading entity config changes from ZooKeeper failed: %s", e)
                if not self._closed:
                    self.zk.loop.call_later(1.0, self._notified)
                return

    async def _process_new(self) -> None:
        c, wait = self._client, self.zk._wait
        names = sorted((n for n in await wait(c.get_children_async(CHANGES))
                        if notice_seq(n) >= 0), key=notice_seq)
        for name in names:
            seq = notice_seq(name)
            if seq <= self.last_seq:
                continue
            znode = f"{CHANGES}/{name}"
            try:
                data, _ = await wait(c.get_async(znode))
            except NoNodeError:
                self.last_seq = seq
                continue
            try:
                path = self.check_path(decode_notice(data))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                log.warning("ignoring change notice %s: %s", znode, e)
            else:
                self._changed(path, await self._read(path))
            self.last_seq = seq
        if time.monotonic() - self._last_purge >= PURGE_INTERVAL_S:
            self._last_purge = time.monotonic()
            await self._purge(names)

    async def _purge(self, names: list[str]) -> None:
        """Delete notices older than NOTICE_EXPIRATION_MS (any broker may; the others'
        attempts find them gone)."""
        c, wait = self._client, self.zk._wait
        now_ms = int(time.time() * 1000)
        for name in names:
            znode = f"{CHANGES}/{name}"
            try:
                _, stat = await wait(c.get_async(znode))
                if now_ms - stat.ctime > NOTICE_EXPIRATION_MS:
                    await wait(c.delete_async(znode))
            except NoNodeError:
                pass

    # -- writing ------------------------------------------------------------------------

    async def alter(self, path, changes) -> dict[str, str]:
        path = self.check_path(path)
        c, wait = self._client, self.zk._wait
        znode = f"{CONFIG}/{path}"
        while True:
            try:
                data, stat = await wait(c.get_async(znode))
                current, version = decode_config(data), stat.version
            except NoNodeError:
                current, version = {}, None
            config = merged(current, changes)
            try:
                if version is None:
                    await wait(c.create_async(znode, encode_config(config), makepath=True))
                else:
                    await wait(c.set_async(znode, encode_config(config), version=version))
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue          # another broker changed it meanwhile: merge into theirs
        await wait(c.create_async(f"{CHANGES}/{CHANGE_PREFIX}", encode_notice(path),
                                  sequence=True))
        self._changed(path, config)          # in force here now; the others follow the notice
        return config

    async def close(self) -> None:
        self._closed = True
        if self._processing is not None:
            self._processing.cancel()

