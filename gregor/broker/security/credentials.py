"""SCRAM credentials of a single-node broker, stored durably in its data directory.

    <data dir>/scram-credentials.json   (mode 0600)
    {"version": 1, "users": {"alice": {"SCRAM-SHA-256": "salt=..,stored_key=..,server_key=..,iterations=4096"}}}

Each user's entry is the same config map Kafka keeps in ZooKeeper's /config/users/<user>
(credentials per mechanism as ScramCredentialUtils strings; other keys are kept untouched).
Writes replace the file atomically (a temporary file, fsync, rename, fsync of the directory),
so a credential the broker acknowledged survives kill -9, and a crash never leaves half a file.
Readers notice when the file changed (its size, inode and modification time), so `gregor users
add --data-dir` works before the broker starts and while it runs; writers hold an flock so the
broker and the command never lose each other's changes.

The cluster's store (ZooKeeper) is credentials_zk.py; both offer the same methods.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from pathlib import Path

from ...security.scram import MECHANISMS, ScramCredential, ScramError

log = logging.getLogger("gregor.broker.security.credentials")

FILE_NAME = "scram-credentials.json"
_LOCK_NAME = ".scram-credentials.lock"


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


class FileCredentialStore:
    def __init__(self, data_dir: str | os.PathLike):
        self.dir = Path(data_dir)
        self.path = self.dir / FILE_NAME
        self._stamp = None
        self._users: dict[str, dict[str, str]] = {}

    # -- reading ------------------------------------------------------------------------

    def _fresh(self) -> dict[str, dict[str, str]]:
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._users = self._read() if stamp is not None else {}
            self._stamp = stamp
        return self._users

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise CredentialStoreError(f"cannot read SCRAM credentials from {self.path}: {e}; "
                                       "restore it from a backup or remove it") from None
        users = doc.get("users") if isinstance(doc, dict) else None
        if not isinstance(users, dict):
            raise CredentialStoreError(f"{self.path} is not a SCRAM credential file")
        return {str(u): {str(k): str(v) for k, v in (cfg or {}).items()}
                for u, cfg in users.items()}

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """The user's credential for a mechanism (what authentication asks), or None."""
        try:
            cfg = self._fresh().get(user)
        except CredentialStoreError as e:
            log.error("%s", e)
            return None
        return None if cfg is None else credential_of(cfg, mechanism)

    def user_config(self, user: str) -> dict[str, str]:
        return dict(self._fresh().get(user, {}))

    def all_user_configs(self) -> dict[str, dict[str, str]]:
        return {u: dict(c) for u, c in self._fresh().items()}

    # -- writing ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / _LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def write_user_configs(self, changes: dict[str, dict[str, str]]) -> None:
        """Replace the config maps of these users (an empty map removes the user), durably."""
        with self._locked():
            self._stamp = None                     # re-read under the lock
            users = self.all_user_configs()
            for user, cfg in changes.items():
                if cfg:
                    users[user] = dict(cfg)
                else:
                    users.pop(user, None)
            self._write(users)
            self._stamp = None

    def _write(self, users: dict[str, dict[str, str]]) -> None:
        data = json.dumps({"version": 1, "users": dict(sorted(users.items()))}, indent=1,
                          sort_keys=True).encode("utf-8")
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            dfd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            raise CredentialStoreError(f"cannot write SCRAM credentials to {self.path}: "
                                       f"{e.strerror or e}") from None

    def mechanisms_of(self, user: str) -> dict[str, ScramCredential]:
        cfg = self.user_config(user)
        return {m: c for m in MECHANISMS if (c := credential_of(cfg, m)) is not None}
