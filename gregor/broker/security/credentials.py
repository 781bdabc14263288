"""SCRAM credentials, kept in the entity config store that quotas share.

Kafka's ZooKeeper mode keeps a user's credentials in /config/users/<sanitized user>, one key
per mechanism, beside the user's quotas:

    {"SCRAM-SHA-256": "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096",
     "producer_byte_rate": "1048576"}

gregor keeps them the same way in its one store of entity configs
(gregor/broker/entity_configs/): a single node's `entity-configs.json` in the data directory
(atomic, fsynced writes; other processes' writes noticed), a cluster's /config znodes with
change notices every broker follows. `ScramCredentials` is the SCRAM view of that store:
authentication reads the in-memory copy (never waits on a disk or ZooKeeper), and writes
change only the SCRAM keys of a user, so a quota change never drops a credential, nor the
other way round.

A data directory from before the store was shared has `scram-credentials.json`; its users are
moved into the store once, and the old file renamed `scram-credentials.json.migrated`.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from ...security.scram import MECHANISMS, ScramCredential, ScramError
from ..entity_configs.file_store import FILE_NAME, EntityStoreError, FileEntityConfigStore
from ..entity_configs.names import DEFAULT, USERS, desanitize, sanitize

log = logging.getLogger("gregor.broker.security.credentials")

LEGACY_FILE_NAME = "scram-credentials.json"
__all__ = ["FILE_NAME", "LEGACY_FILE_NAME", "CredentialStoreError", "ScramCredentials",
           "FileCredentialStore", "credential_of", "migrate_legacy_file"]


class CredentialStoreError(RuntimeError):
    """The credential store cannot be read or written."""


def credential_of(config: dict, mechanism: str) -> ScramCredential | None:
    text = config.get(mechanism)
    if text is None:
        return None
    try:
        return ScramCredential.from_text(text)
    except ScramError as e:
        log.error("stored %s credential is malformed (%s); treating it as absent", mechanism, e)
        return None


def user_path(user: str) -> str:
    return f"{USERS}/{sanitize(user)}"


class ScramCredentials:
    """The SCRAM keys of the users in an entity config store."""

    def __init__(self, store):
        self.store = store

    def _fresh(self):
        """The store, re-read first if another process changed its file (a stat)."""
        refresh = getattr(self.store, "refresh", None)
        if refresh is not None:
            try:
                refresh()
            except EntityStoreError as e:
                raise CredentialStoreError(f"cannot read SCRAM credentials: {e}") from None
        return self.store

    # -- reading (no I/O but a file's stat) -------------------------------------------------

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """The user's credential for a mechanism (what authentication asks), or None."""
        try:
            config = self._fresh().get(user_path(user))
        except CredentialStoreError as e:
            log.error("%s", e)
            return None
        return credential_of(config, mechanism)

    def user_config(self, user: str) -> dict[str, str]:
        return self._fresh().get(user_path(user))

    def all_user_configs(self) -> dict[str, dict[str, str]]:
        """{user: config} of the users entities (not their client-id entities, not the
        default user)."""
        out = {}
        for path, config in self._fresh().entities(USERS).items():
            parts = path.split("/")
            if len(parts) == 2 and parts[1] != DEFAULT:
                out[desanitize(parts[1])] = config
        return out

    def mechanisms_of(self, user: str) -> dict[str, ScramCredential]:
        cfg = self.user_config(user)
        return {m: c for m in MECHANISMS if (c := credential_of(cfg, m)) is not None}

    # -- writing ------------------------------------------------------------------------------

    @staticmethod
    def _scram_changes(config: dict) -> dict[str, str | None]:
        """A user's new map reduced to its SCRAM keys (None: no credential for that one)."""
        return {m: config.get(m) for m in MECHANISMS}

    async def write(self, changes: dict[str, dict[str, str]]) -> None:
        """Set each user's SCRAM keys to what its map holds (an absent mechanism is removed);
        the user's other keys (quotas) are kept. Durable before it returns."""
        for user, config in changes.items():
            await self.store.alter(user_path(user), self._scram_changes(config))

    def write_user_configs(self, changes: dict[str, dict[str, str]]) -> None:
        """write(), blocking: for a single node's file (offline commands and tests)."""
        alter_now = getattr(self.store, "alter_now", None)
        if alter_now is None:
            raise TypeError("this credential store is written with `await write(...)`")
        try:
            for user, config in changes.items():
                alter_now(user_path(user), self._scram_changes(config))
        except (OSError, EntityStoreError) as e:
            raise CredentialStoreError(f"cannot write SCRAM credentials: {e}") from None

    def close(self) -> None:
        pass                    # the store belongs to the broker (or to whoever opened it)


def migrate_legacy_file(data_dir: str | os.PathLike, store: FileEntityConfigStore) -> int:
    """Move the users of a data directory's old `scram-credentials.json` into the store (keys
    already in the store win); returns how many users were moved."""
    legacy = Path(data_dir) / LEGACY_FILE_NAME
    if not legacy.exists():
        return 0
    try:
        users = json.loads(legacy.read_text(encoding="utf-8")).get("users") or {}
    except (OSError, ValueError, AttributeError) as e:
        raise CredentialStoreError(f"cannot read {legacy} to move its users into "
                                   f"{FILE_NAME}: {e}; fix or remove it") from None
    for user, config in users.items():
        have = store.get(user_path(str(user)))
        missing = {str(k): str(v) for k, v in (config or {}).items()
                   if k in MECHANISMS and k not in have}
        if missing:
            store.alter_now(user_path(str(user)), missing)
    legacy.rename(legacy.with_name(legacy.name + ".migrated"))
    log.info("moved the SCRAM credentials of %d user(s) from %s into %s", len(users), legacy,
             FILE_NAME)
    return len(users)


def FileCredentialStore(data_dir: str | os.PathLike) -> ScramCredentials:
    """The credentials of a single node's data directory, for a process that is not the
    broker (`gregor users --data-dir`, tests); read lazily, so a damaged file is reported
    when a credential is asked for."""
    store = FileEntityConfigStore(data_dir)
    try:
        store.refresh()
        migrate_legacy_file(data_dir, store)
    except EntityStoreError as e:
        log.error("cannot read SCRAM credentials: %s", e)
    return ScramCredentials(store)
