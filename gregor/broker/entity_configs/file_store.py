"""The single-node backend of the entity config store: one JSON file in the data directory.

    <data dir>/entity-configs.json   (mode 0600: it may hold SCRAM credentials)
    {"version": 1, "entities": {"users/alice": {"producer_byte_rate": "1048576",
                                                "SCRAM-SHA-256": "salt=..,stored_key=..,..."},
                                "clients/<default>": {"consumer_byte_rate": "2097152"}}}

Keys are the entity paths of names.py, values the same config maps Kafka keeps in its znodes.
A write replaces the file atomically (temporary file, fsync, rename, fsync of the directory), so
an acknowledged change survives kill -9 and a crash never leaves half a file. Writers hold an
flock on a lock file, so the broker and an offline command (editing the same data directory)
never lose each other's changes; `refresh()` notices a file changed by another process (its
inode, size and modification time) and tells the listeners what changed.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
from pathlib import Path
from typing import Mapping

from .store import EntityConfigStore, merged

log = logging.getLogger("gregor.broker.entity_configs")

FILE_NAME = "entity-configs.json"
_LOCK_NAME = ".entity-configs.lock"


class EntityStoreError(RuntimeError):
    """The entity config file cannot be read or written."""


class FileEntityConfigStore(EntityConfigStore):
    def __init__(self, data_dir: str | os.PathLike):
        super().__init__()
        self.dir = Path(data_dir)
        self.path = self.dir / FILE_NAME
        self._stamp = None
        self._lock = asyncio.Lock()
        self._poller: asyncio.Task | None = None

    # -- reading ------------------------------------------------------------------------

    def load(self) -> "FileEntityConfigStore":
        """Read the file (missing: no entities). Raises EntityStoreError when unreadable."""
        self.refresh()
        return self

    def refresh(self) -> bool:
        """Re-read the file if another process changed it; True when something changed."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return False
        configs = self._read() if stamp is not None else {}
        self._stamp = stamp
        before = dict(self._configs)
        self._replace_all(configs)
        return before != self._configs

    def _file_stamp(self):
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise EntityStoreError(f"cannot read entity configs (quotas, credentials) from "
                                   f"{self.path}: {e}; restore it from a backup or remove "
                                   "it") from None
        entities = doc.get("entities") if isinstance(doc, dict) else None
        if not isinstance(entities, dict):
            raise EntityStoreError(f"{self.path} is not an entity config file (no "
                                   "'entities' object)")
        out = {}
        for path, config in entities.items():
            try:
                path = self.check_path(path)
            except ValueError as e:
                log.warning("ignoring %s in %s: %s", path, self.path, e)
                continue
            if isinstance(config, dict) and config:
                out[path] = {str(k): str(v) for k, v in config.items()}
        return out

    # -- writing --------------------------------------------------------------------------

    async def alter(self, path, changes: Mapping[str, str | None]) -> dict[str, str]:
        path = self.check_path(path)
        async with self._lock:       # one writer of this process at a time, off the loop
            config = await asyncio.get_running_loop().run_in_executor(
                None, self._write_change, path, dict(changes))
            self.refresh()
        return config

    def alter_now(self, path, changes: Mapping[str, str | None]) -> dict[str, str]:
        """The blocking form of alter() (offline tools, tests)."""
        path = self.check_path(path)
        config = self._write_change(path, dict(changes))
        self.refresh()
        return config

    def _write_change(self, path: str, changes: dict) -> dict[str, str]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._file_lock():
            current = self._read()          # what another process may have written
            config = merged(current.get(path, {}), changes)
            if config == current.get(path, {}):
                return config               # nothing changes: no write, no fsync
            if config:
                current[path] = config
            else:
                current.pop(path, None)
            doc = {"version": 1, "entities": {p: current[p] for p in sorted(current)}}
            _write_atomically(self.path, json.dumps(doc, indent=1).encode())
        return config

    @contextlib.contextmanager
    def _file_lock(self):
        fd = os.open(self.dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)              # releases the lock

    # -- following other processes' writes ------------------------------------------------

    def start_polling(self, interval_s: float = 1.0) -> None:
        """Notice changes an offline command makes while the broker runs."""
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll(interval_s))

    async def _poll(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.refresh()
            except EntityStoreError as e:
                log.error("%s", e)

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None


def _write_atomically(path: Path, data: bytes) -> None:
    # topics.write_atomically creates 0644 files; this one may hold credentials (0600)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
