"""ACLs in ZooKeeper, in Kafka's ZooKeeper-mode layout (ZkData.scala, AclAuthorizer.scala),
so znodes written by Kafka's kafka-acls (--authorizer-properties zookeeper.connect=...) and
by gregor are the same thing:

    /kafka-acl/<ResourceType>/<name>                    LITERAL patterns (incl. "*")
    /kafka-acl-extended/prefixed/<ResourceType>/<name>  PREFIXED patterns
      data: {"version":1,"acls":[{"principal","permissionType","operation","host"}]}
    /kafka-acl-changes/acl_changes_<seq>                "TOPIC:orders" (a LITERAL change)
    /kafka-acl-extended-changes/acl_changes_<seq>       {"version":1,"resourceType":"TOPIC",
                                                         "name":"logs-","patternType":"PREFIXED"}

A change is a versioned conditional write of the resource's znode (create when missing,
delete when no ACL is left), retried from a fresh read when another writer got there first,
then a sequential change notification. Every broker watches both notification directories
and re-reads the resources they name, so a change reaches every broker within about a
second; notifications older than 15 minutes are deleted, as Kafka's listener does.

All ZooKeeper calls use kazoo's *_async forms, answered on the asyncio loop.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time

from kazoo.exceptions import BadVersionError, NoNodeError, NodeExistsError, NotEmptyError
from kazoo.protocol.states import KazooState

from ...protocol.acl import (PatternType, ResourcePattern, ResourceType, entries_from_json,
                             entries_to_json)
from .acl_store import AclStore, AclStoreError

log = logging.getLogger("gregor.broker.security.acls")

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended"
PREFIXED_ROOT = EXTENDED_ROOT + "/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ROOTS = {PatternType.LITERAL: LITERAL_ROOT, PatternType.PREFIXED: PREFIXED_ROOT}
# Kafka's ZkNodeChangeNotificationListener.changeExpirationMs: notifications are kept this
# long (a broker that was away longer re-reads everything anyway when it starts).
CHANGE_EXPIRATION_S = 15 * 60
MAX_UPDATE_RETRIES = 10       # Kafka's AclAuthorizer.maxUpdateRetries


def resource_path(p: ResourcePattern) -> str:
    return f"{ROOTS[p.pattern_type]}/{p.resource_type.pascal}/{p.name}"


def encode_change(p: ResourcePattern) -> tuple[str, bytes]:
    """(notification directory, data) announcing a change of p's ACLs."""
    if p.pattern_type == PatternType.LITERAL:
        return LITERAL_CHANGES, f"{p.resource_type.name}:{p.name}".encode()
    return EXTENDED_CHANGES, json.dumps(
        {"version": 1, "resourceType": p.resource_type.name, "name": p.name,
         "patternType": p.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(directory: str, data: bytes) -> ResourcePattern:
    text = data.decode()
    if directory == LITERAL_CHANGES:
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName, got {text!r}")
        return ResourcePattern(ResourceType.parse(kind), name, PatternType.LITERAL)
    doc = json.loads(text)
    if doc.get("version", 1) > 1:
        raise ValueError(f"ACL change event of unsupported version {doc.get('version')}")
    return ResourcePattern(ResourceType.parse(doc["resourceType"]), doc["name"],
                           PatternType.parse(doc["patternType"]))


def change_sequence(node: str) -> int:
    return int(node[len(CHANGE_PREFIX):]) if node.startswith(CHANGE_PREFIX) else -1


class ZkAclStore(AclStore):
    """ACL storage over the broker's ZooKeeper connection (a connected MetadataStore)."""

    def __init__(self, metadata_store):
        self.zk = metadata_store
        self._seen = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self._on_change = None
        self._lock: asyncio.Lock | None = None
        self._pending: asyncio.Task | None = None
        self._dirty: set[str] = set()
        self._session_lost = False
        self._closed = False
        self._known: set[ResourcePattern] = set()    # patterns with ACLs, as last read

    @property
    def client(self):
        return self.zk.client

    def _wait(self, async_result) -> asyncio.Future:
        """An asyncio future for a kazoo IAsyncResult (kazoo answers on its own thread)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def done(r):
            def settle():
                if not fut.done():
                    try:
                        fut.set_result(r.get_nowait())
                    except Exception as e:
                        fut.set_exception(e)
            loop.call_soon_threadsafe(settle)
        async_result.rawlink(done)
        return fut

    async def _children(self, path: str, watch=None) -> list[str]:
        try:
            return await self._wait(self.client.get_children_async(path, watch=watch))
        except NoNodeError:
            return []

    async def _read(self, pattern: ResourcePattern):
        """(entries, zkVersion or None when the znode does not exist)."""
        try:
            data, stat = await self._wait(self.client.get_async(resource_path(pattern)))
        except NoNodeError:
            return frozenset(), None
        try:
            return entries_from_json(data), stat.version
        except (ValueError, KeyError, TypeError) as e:
            raise AclStoreError(f"{resource_path(pattern)} does not hold ACL JSON ({e})") \
                from None

    # -- reading everything -----------------------------------------------------------------

    async def load(self):
        for path in (LITERAL_ROOT, PREFIXED_ROOT, LITERAL_CHANGES, EXTENDED_CHANGES):
            await self._wait(self.client.ensure_path_async(path))
        # the notifications present now are covered by the full read below
        for directory in self._seen:
            seqs = [change_sequence(n) for n in await self._children(directory)]
            self._seen[directory] = max(seqs, default=-1)
        out = {}
        for pattern_type, root in ROOTS.items():
            for kind in await self._children(root):
                try:
                    rtype = ResourceType.parse(kind)
                except ValueError:
                    log.warning("ignoring ACLs of unknown resource type %s/%s", root, kind)
                    continue
                names = await self._children(f"{root}/{kind}")
                reads = {n: self._read(ResourcePattern(rtype, n, pattern_type)) for n in names}
                for name, read in reads.items():
                    try:
                        entries, _ = await read
                    except AclStoreError as e:
                        log.error("ignoring unreadable ACLs: %s", e)
                        continue
                    if entries:
                        out[ResourcePattern(rtype, name, pattern_type)] = entries
        self._known = set(out)
        return out

    # -- changing ---------------------------------------------------------------------------

    async def modify(self, changes):
        results = {}
        for pattern, change in changes.items():
            results[pattern] = await self._modify_one(pattern, change)
            self._note(pattern, results[pattern][1])
        return results

    def _note(self, pattern, entries) -> None:
        if entries:
            self._known.add(pattern)
        else:
            self._known.discard(pattern)

    async def _modify_one(self, pattern, change):
        c, path = self.client, resource_path(pattern)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            before, version = await self._read(pattern)
            after = frozenset(change(before))
            if after == before:
                return before, after
            try:
                if after and version is not None:
                    await self._wait(c.set_async(path, entries_to_json(after), version=version))
                elif after:
                    await self._wait(c.create_async(path, entries_to_json(after),
                                                    makepath=True))
                elif version is not None:
                    await self._wait(c.delete_async(path, version=version))
            except (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError):
                await asyncio.sleep(0.1)        # another writer won: read again
                continue
            directory, data = encode_change(pattern)
            await self._wait(c.create_async(f"{directory}/{CHANGE_PREFIX}", data,
                                            sequence=True, makepath=True))
            return before, after
        raise AclStoreError(f"could not update the ACLs of {pattern} after "
                            f"{MAX_UPDATE_RETRIES} attempts (concurrent writers)")

    # -- following the others' changes -----------------------------------------------------

    def watch(self, on_change, lock) -> None:
        self._on_change, self._lock = on_change, lock
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.client.add_listener(self._session_listener)
        for directory in self._seen:
            self._dirty.add(directory)
        self._schedule()

    def _session_listener(self, state) -> None:           # kazoo's thread
        if state == KazooState.LOST:
            self._session_lost = True        # watches are gone: re-read everything
        elif state == KazooState.CONNECTED and self._session_lost and not self._closed:
            self._loop.call_soon_threadsafe(self._resync)

    def _watcher(self, directory: str):
        def fire(event) -> None:                           # kazoo's thread
            if not self._closed:
                self._loop.call_soon_threadsafe(self._mark, directory)
        return fire

    def _mark(self, directory: str) -> None:
        self._dirty.add(directory)
        self._schedule()

    def _schedule(self) -> None:
        if self._pending is None or self._pending.done():
            self._pending = self._loop.create_task(self._process())

    def _resync(self) -> None:
        self._session_lost = False
        task = self._loop.create_task(self._full_reload())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _full_reload(self) -> None:
        async with self._lock:
            before = set(self._known)
            now = await self.load()
            for pattern in before | set(now):
                self._on_change(pattern, now.get(pattern, frozenset()))
            self._dirty.update(self._seen)
        self._schedule()

    async def _process(self) -> None:
        while self._dirty and not self._closed:
            directory = self._dirty.pop()
            try:
                await self._process_directory(directory)
            except Exception as e:        # ZooKeeper unreachable: the session listener or
                log.warning("reading ACL change notifications failed: %s", e)   # the next
                return                                                          # watch retries

    async def _process_directory(self, directory: str) -> None:
        nodes = await self._children(directory, watch=self._watcher(directory))
        fresh = sorted((change_sequence(n), n) for n in nodes
                       if change_sequence(n) > self._seen[directory])
        async with self._lock:
            for seq, node in fresh:
                try:
                    data, _ = await self._wait(self.client.get_async(f"{directory}/{node}"))
                    pattern = decode_change(directory, data)
                    entries, _ = await self._read(pattern)
                except NoNodeError:
                    continue                                  # purged meanwhile
                except (ValueError, KeyError, AclStoreError) as e:
                    log.error("ignoring ACL change notification %s/%s: %s", directory, node, e)
                else:
                    self._note(pattern, entries)
                    self._on_change(pattern, entries)
                self._seen[directory] = max(self._seen[directory], seq)
        await self._purge(directory, nodes)

    async def _purge(self, directory: str, nodes: list[str]) -> None:
        """Delete notifications older than CHANGE_EXPIRATION_S (every broker may; the first
        one wins)."""
        cutoff_ms = (time.time() - CHANGE_EXPIRATION_S) * 1000
        for node in sorted(nodes, key=change_sequence)[:-1]:       # never the newest
            try:
                stat = await self._wait(self.client.exists_async(f"{directory}/{node}"))
                if stat is not None and stat.ctime < cutoff_ms:
                    await self._wait(self.client.delete_async(f"{directory}/{node}"))
            except NoNodeError:
                continue

    async def close(self) -> None:
        self._closed = True
        if self._pending is not None:
            self._pending.cancel()
        try:
            self.client.remove_listener(self._session_listener)
        except (AttributeError, ValueError):
            pass
