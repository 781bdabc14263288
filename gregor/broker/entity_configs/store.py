"""The store of entity configs (users, clients, ips) that quotas and SCRAM credentials share.

Kafka keeps one config map per entity (ZooKeeper mode: the znode /config/users/alice holds
alice's SCRAM credentials and her quotas side by side). gregor does the same with one store
and two backends:

- a single node: a JSON file in the data directory (file_store.py), written atomically;
- a cluster: Kafka's own znodes under /config with change notifications
  (gregor/broker/cluster/entity_configs_zk.py), so every broker follows every change.

Both keep every entity's map in memory: reads (`get`, `entities`) are plain dict lookups with
no I/O, which the per-request quota lookups and SASL logins need. Writes (`alter`) change the
named keys of one entity and keep its other keys (a quota change never drops a credential);
listeners hear about every change, local or made elsewhere, on the broker's event loop.
"""
from __future__ import annotations

import logging
from typing import Callable, Mapping

from .names import EntityPath

log = logging.getLogger("gregor.broker.entity_configs")

Listener = Callable[[str, dict], None]


def merged(config: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """config with changes applied: a value sets its key, None removes it."""
    out = dict(config)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = str(value)
    return out


class EntityConfigStore:
    """The in-memory view and the listeners; a backend fills `_configs` and implements
    `alter`."""

    def __init__(self):
        self._configs: dict[str, dict[str, str]] = {}
        self._listeners: list[Listener] = []

    # -- reading (no I/O) -------------------------------------------------------------------

    def get(self, path: str | EntityPath) -> dict[str, str]:
        """The entity's config map (a copy; {} when it has none)."""
        return dict(self._configs.get(str(path), ()))

    def entities(self, entity_type: str | None = None) -> dict[str, dict[str, str]]:
        """{path: config} of every entity with a config, optionally of one type ('users'
        includes users/<u>/clients/<c>)."""
        if entity_type is None:
            return {p: dict(c) for p, c in self._configs.items()}
        prefix = entity_type + "/"
        return {p: dict(c) for p, c in self._configs.items() if p.startswith(prefix)}

    # -- writing ------------------------------------------------------------------------------

    async def alter(self, path: str | EntityPath, changes: Mapping[str, str | None]
                    ) -> dict[str, str]:
        """Set (value) or remove (None) keys of one entity, keeping its other keys, durably;
        returns the entity's new map. Listeners hear about it before this returns."""
        raise NotImplementedError

    # -- listening ----------------------------------------------------------------------------

    def listen(self, fn: Listener) -> None:
        """fn(path, config) after every change of an entity's map ({} once it has none)."""
        self._listeners.append(fn)

    def _changed(self, path: str, config: Mapping[str, str]) -> None:
        """Record an entity's new map and tell the listeners (only when it changed)."""
        new = dict(config)
        if self._configs.get(path, {}) == new:
            return
        if new:
            self._configs[path] = new
        else:
            self._configs.pop(path, None)
        for fn in list(self._listeners):
            try:
                fn(path, dict(new))
            except Exception:
                log.exception("a listener of entity config changes failed on %s", path)

    def _replace_all(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """Take a complete new view (a reload), telling listeners what differs."""
        for path in list(self._configs):
            if path not in configs:
                self._changed(path, {})
        for path, config in configs.items():
            self._changed(path, config)

    @staticmethod
    def check_path(path: str | EntityPath) -> str:
        """The path as text, after checking it names an entity (ValueError otherwise)."""
        return str(path if isinstance(path, EntityPath) else EntityPath.parse(path))

    async def close(self) -> None:
        pass
