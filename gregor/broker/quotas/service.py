"""The broker's quotas: managers fed from the entity config store, switched on and off.

`QuotaService` reads every quota in the store at start and follows each change (made by
AlterClientQuotas on any broker, or by Kafka's tools writing the znodes): the managers'
tables change at once, and `Server.quotas` is set to the enforcer while any quota is
configured and back to None when the last one goes, so a broker without quotas does no quota
work per request.

Windows are Kafka's settings: quota.window.num x quota.window.size.seconds for byte rates,
request time and connection rates; controller.quota.window.num x
controller.quota.window.size.seconds for controller mutations.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ..config import ConfigError
from ..entity_configs.names import CLIENTS, DEFAULT, IPS, USERS, EntityPath, desanitize
from .connections import ConnectionRateQuotas
from .enforcement import QuotaEnforcer
from .keys import (CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE,
                   PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, stored_to_float)
from .manager import ClientQuotaManager, ControllerMutationQuotaManager

log = logging.getLogger("gregor.broker.quotas")

# CreateTopics, CreatePartitions, DeleteTopics: the first versions whose clients expect
# THROTTLING_QUOTA_EXCEEDED (KIP-599); older ones are admitted and only throttled
STRICT_SINCE = {19: 6, 37: 3, 20: 5}


class QuotaService:
    def __init__(self, config):
        for name in ("quota.window.num", "quota.window.size.seconds",
                     "controller.quota.window.num", "controller.quota.window.size.seconds"):
            if int(config.get(name)) < 1:
                raise ConfigError(f"{name} must be at least 1, got {config.get(name)}")
        num = int(config.get("quota.window.num"))
        window = int(config.get("quota.window.size.seconds"))
        self.produce = ClientQuotaManager("produce", num, window)
        self.fetch = ClientQuotaManager("fetch", num, window)
        # Kafka bounds a request-time throttle to one window
        self.request = ClientQuotaManager("request", num, window, max_throttle_ms=window * 1000)
        self.mutations = ControllerMutationQuotaManager(
            int(config.get("controller.quota.window.num")),
            int(config.get("controller.quota.window.size.seconds")))
        self.connections = ConnectionRateQuotas(num, window)
        self._by_key = {PRODUCER_BYTE_RATE: self.produce, CONSUMER_BYTE_RATE: self.fetch,
                        REQUEST_PERCENTAGE: self.request,
                        CONTROLLER_MUTATION_RATE: self.mutations}
        self.enforcer = QuotaEnforcer(self)
        self.server = None
        self.store = None
        self._applied: dict[str, dict[str, float]] = {}     # path -> quota values in force
        self._expiry: asyncio.Task | None = None

    # -- wiring ---------------------------------------------------------------------------

    def start(self, store, server) -> None:
        """Apply every quota in the store and follow its changes; `server.quotas` is the
        enforcer while any quota is configured."""
        self.store, self.server = store, server
        for path, config in store.entities().items():
            self.apply(path, config)
        store.listen(self.apply)
        self._switch()
        self._expiry = asyncio.get_running_loop().create_task(self._expire_loop())

    def close(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()

    @property
    def active(self) -> bool:
        return (self.produce.enabled or self.fetch.enabled or self.request.enabled
                or self.mutations.enabled or self.connections.enabled)

    def _switch(self) -> None:
        if self.server is not None:
            self.server.quotas = self.enforcer if self.active else None

    # -- following the store ------------------------------------------------------------

    def apply(self, path: str, config: dict) -> None:
        """An entity's config changed: put its quota values in force."""
        try:
            entity = EntityPath.parse(path)
        except ValueError:
            return
        wanted: dict[str, float] = {}
        for key, text in config.items():
            if key in self._by_key or key == CONNECTION_CREATION_RATE:
                value = stored_to_float(key, text)
                if value is None:
                    log.warning("ignoring %s=%r of %s: not a positive number", key, text, path)
                    continue
                wanted[key] = value
        before = self._applied.get(path, {})
        if wanted == before:
            return
        if entity.type == IPS:
            ip = entity.name if entity.name == DEFAULT else desanitize(entity.name)
            self.connections.update(ip, wanted.get(CONNECTION_CREATION_RATE))
        else:
            user = entity.name if entity.type == USERS else None
            if entity.type == CLIENTS:
                client = _client_key(entity.name)
            else:
                client = None if entity.client is None else _client_key(entity.client)
            for key, manager in self._by_key.items():
                if key in wanted or key in before:
                    manager.update(user, client, wanted.get(key))
        if wanted:
            self._applied[path] = wanted
        else:
            self._applied.pop(path, None)
        log.info("quotas of %s are now %s", path, wanted or "none")
        self._switch()

    # -- controller mutations (CreateTopics, CreatePartitions, DeleteTopics) -------------

    def mutation_budget(self, ctx):
        """The controller mutation budget of a request, and whether it is strict (the
        request's version expects THROTTLING_QUOTA_EXCEEDED); (None, False) without one."""
        conn = ctx.connection
        if conn is None or not self.mutations.enabled:
            return None, False
        budget = self.mutations.budget(conn.principal.name, ctx.client_id or "")
        return budget, ctx.api_version >= STRICT_SINCE.get(ctx.api_key, 1 << 15)

    # -- housekeeping ---------------------------------------------------------------------

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(60)
            now_ms = int(time.monotonic() * 1000)
            for manager in (self.produce, self.fetch, self.request, self.mutations):
                manager.expire(now_ms)

    def managers(self):
        return [self.produce, self.fetch, self.request, self.mutations]


def _client_key(stored: str) -> str:
    """A client entity's key in the tables: the plain client id, or <default>."""
    return stored if stored == DEFAULT else desanitize(stored)
