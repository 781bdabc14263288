"""Where ACLs live, and the create / delete / describe operations over them.

`AclStore` is the storage seam: `load()` everything, `modify()` some resource patterns with
read-modify-write functions (returning each pattern's ACLs before and after), and
`watch(on_change)` for changes written by someone else (another broker, the offline CLI).

- `FileAclStore` (single node): `acls.json` in the data directory, rewritten atomically
  (temporary file, fsync, rename, fsync of the directory) under an flock, so an
  acknowledged change survives kill -9 and the offline `gregor acls --data-dir` can edit the
  file while a broker runs (the broker notices within a second: it polls the file's stat).
- `ZkAclStore` (cluster mode, acl_store_zk.py): Kafka's znodes and change notifications.

`AclService` ties a store to the authorizer's in-memory ACLs: validation as Kafka's AclApis
and AclAuthorizer do it, persistence first, then the in-memory update.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Callable, Iterable

from ...protocol.acl import (AccessControlEntry, AclBinding, AclBindingFilter, PatternType,
                             ResourcePattern, ResourceType, binding_problem, entries_from_dicts,
                             entries_to_dicts, filter_problem)
from ..topics import write_atomically
from .authorizer import AclAuthorizer

log = logging.getLogger("gregor.broker.security.acls")

Entries = frozenset  # of AccessControlEntry
Change = Callable[[Entries], Entries]
ACL_FILE = "acls.json"
POLL_S = 0.5          # how often a broker checks acls.json for changes made outside it


class AclStoreError(Exception):
    """The ACL storage could not be read or written; the message says which and why."""


class AclStore:
    async def load(self) -> dict[ResourcePattern, Entries]:
        raise NotImplementedError

    async def modify(self, changes: dict[ResourcePattern, Change]
                     ) -> dict[ResourcePattern, tuple[Entries, Entries]]:
        raise NotImplementedError

    def watch(self, on_change: Callable[[ResourcePattern, Entries], None],
              lock: asyncio.Lock) -> None:
        """Call on_change(pattern, entries) for changes made by others (on the loop), each
        reload and its application under `lock`, which the service's own changes hold too
        (so an older state read from storage never overwrites a newer one applied)."""

    async def close(self) -> None:
        pass


# -- single node: a file in the data directory ------------------------------------------------

def encode_file(acls: dict[ResourcePattern, Entries]) -> bytes:
    resources = []
    for p in sorted(acls, key=lambda p: (int(p.resource_type), int(p.pattern_type), p.name)):
        resources.append({"resourceType": p.resource_type.pascal,
                          "patternType": p.pattern_type.name, "name": p.name,
                          "acls": entries_to_dicts(acls[p])})
    return json.dumps({"version": 1, "resources": resources}, indent=1).encode() + b"\n"


def decode_file(data: bytes, where: str) -> dict[ResourcePattern, Entries]:
    try:
        doc = json.loads(data)
        if doc.get("version") != 1:
            raise ValueError(f"version {doc.get('version')!r} is not 1")
        out = {}
        for r in doc.get("resources") or []:
            p = ResourcePattern(ResourceType.parse(r["resourceType"]), str(r["name"]),
                                PatternType.parse(r["patternType"]))
            entries = entries_from_dicts(r["acls"])
            if entries:
                out[p] = entries
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise AclStoreError(f"{where} is not valid ACL JSON ({e}); restore it from a backup "
                            f"or remove it (then no ACLs exist)") from None


class FileAclStore(AclStore):
    def __init__(self, data_dir: Path | str):
        self.dir = Path(data_dir)
        self.path = self.dir / ACL_FILE
        self._seen: tuple | None = None       # stat of the file as last read or written
        self._known: dict = {}                # its content then
        self._poller: asyncio.Task | None = None

    def _stat(self):
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _lock(self):
        import fcntl
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / (ACL_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def load_now(self) -> dict[ResourcePattern, Entries]:
        """Read the file (synchronously: a broker opening its data directory)."""
        stat = self._stat()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._seen, self._known = None, {}
            return {}
        acls = decode_file(data, str(self.path))
        self._seen, self._known = stat, dict(acls)
        return acls

    async def load(self) -> dict[ResourcePattern, Entries]:
        return await asyncio.get_running_loop().run_in_executor(None, self.load_now)

    def modify_now(self, changes: dict[ResourcePattern, Change]
                   ) -> dict[ResourcePattern, tuple[Entries, Entries]]:
        fd = self._lock()
        try:
            current = self.load_now()       # what is on disk wins: the CLI may have edited it
            results = {}
            for pattern, change in changes.items():
                before = current.get(pattern, frozenset())
                after = frozenset(change(before))
                results[pattern] = (before, after)
                if after:
                    current[pattern] = after
                else:
                    current.pop(pattern, None)
            if any(b != a for b, a in results.values()):
                write_atomically(self.path, encode_file(current))
                self._seen, self._known = self._stat(), dict(current)
            return results
        except OSError as e:
            raise AclStoreError(f"could not write {self.path}: {e}") from None
        finally:
            os.close(fd)

    async def modify(self, changes):
        return await asyncio.get_running_loop().run_in_executor(None, self.modify_now, changes)

    def watch(self, on_change, lock) -> None:
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll(on_change, lock))

    async def _poll(self, on_change, lock) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            if self._stat() != self._seen:
                async with lock:
                    await self._reload(on_change)

    async def _reload(self, on_change) -> None:
        known = self._known
        try:
            now = await asyncio.get_running_loop().run_in_executor(None, self.load_now)
        except AclStoreError as e:
            log.error("ignoring a change of the ACL file: %s", e)
            self._seen = self._stat()
            return
        changed = [p for p in set(known) | set(now) if known.get(p) != now.get(p)]
        if changed:
            log.info("ACL file changed outside the broker: %d resource pattern(s) updated",
                     len(changed))
        for pattern in changed:
            on_change(pattern, now.get(pattern, frozenset()))

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None


# -- the operations --------------------------------------------------------------------------

class AclService:
    """CreateAcls / DeleteAcls / DescribeAcls over a store, kept in step with the authorizer's
    in-memory ACLs. Errors are (error code name, message) pairs, None for success."""

    def __init__(self, authorizer: AclAuthorizer, store: AclStore):
        self.authorizer = authorizer
        self.store = store
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        self.authorizer.replace_all(await self.store.load())
        self.store.watch(self.authorizer.set_entries, self._lock)

    async def close(self) -> None:
        await self.store.close()

    def describe(self, flt: AclBindingFilter) -> list[AclBinding]:
        return self.authorizer.acls(flt)

    async def create(self, bindings: list[AclBinding]) -> list[tuple[str, str] | None]:
        results: list[tuple[str, str] | None] = [None] * len(bindings)
        adds: dict[ResourcePattern, set[AccessControlEntry]] = {}
        where: dict[ResourcePattern, list[int]] = {}
        for i, b in enumerate(bindings):
            problem = binding_problem(b)
            if problem is not None:
                results[i] = ("INVALID_REQUEST", problem)
                continue
            adds.setdefault(b.pattern, set()).add(b.entry)
            where.setdefault(b.pattern, []).append(i)
        if not adds:
            return results
        changes = {p: (lambda cur, new=frozenset(e): cur | new) for p, e in adds.items()}
        try:
            async with self._lock:
                done = await self.store.modify(changes)
                for pattern, (_, after) in done.items():
                    self.authorizer.set_entries(pattern, after)
        except Exception as e:          # storage failure: every binding of the batch fails
            log.error("creating ACLs failed: %s", e)
            for idx in where.values():
                for i in idx:
                    results[i] = ("UNKNOWN_SERVER_ERROR", f"the ACLs could not be stored: {e}")
        return results

    async def delete(self, filters: list[AclBindingFilter]
                     ) -> list[tuple[tuple[str, str] | None, list[AclBinding]]]:
        """Per filter: (error, the bindings it removed). A binding matching several filters
        is reported under the first (Kafka's AclAuthorizer)."""
        out: list[tuple[tuple[str, str] | None, list[AclBinding]]] = []
        valid = []
        for i, f in enumerate(filters):
            problem = filter_problem(f)
            out.append((("INVALID_REQUEST", problem) if problem else None, []))
            if problem is None:
                valid.append((i, f))
        if not valid:
            return out
        async with self._lock:
            candidates = set(self.authorizer.patterns)
            for _, f in valid:
                candidates.update(f.pattern.exact_patterns())
            targets = {p: [(i, f) for i, f in valid if f.pattern.matches(p)]
                       for p in candidates}
            targets = {p: fs for p, fs in targets.items() if fs}
            if not targets:
                return out

            def remover(fs):
                return lambda cur: frozenset(e for e in cur
                                             if not any(f.entry.matches(e) for _, f in fs))
            try:
                done = await self.store.modify({p: remover(fs) for p, fs in targets.items()})
            except Exception as e:
                log.error("deleting ACLs failed: %s", e)
                return [(err or ("UNKNOWN_SERVER_ERROR", f"the ACLs could not be deleted: {e}"),
                         []) for err, _ in out]
            for pattern, (before, after) in done.items():
                self.authorizer.set_entries(pattern, after)
                for e in sorted(before - after, key=str):
                    first = next(i for i, f in targets[pattern] if f.entry.matches(e))
                    out[first][1].append(AclBinding(pattern, e))
        return out


def bindings_of(acls: dict[ResourcePattern, Iterable[AccessControlEntry]]) -> list[AclBinding]:
    return [AclBinding(p, e) for p, entries in acls.items() for e in entries]
