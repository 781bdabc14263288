"""AlterClientQuotas (49): set or remove quota configs of users, client ids and ips (KIP-546).

Each entry succeeds or fails on its own with Kafka's checks (gregor/broker/quotas/admin.py);
validate_only checks and writes nothing. A change is written to the entity config store
(durably: the data directory's file, or ZooKeeper's znode plus a change notification that
every broker follows) and keeps the entity's other keys, such as a user's SCRAM credentials.
The response lists the entries in request order, each with the entity as the request named it.
A principal without ALTER_CONFIGS on the cluster (with an authorizer configured) gets
CLUSTER_AUTHORIZATION_FAILED for every entry.
"""
from __future__ import annotations

import asyncio
import logging

from ...protocol.errors import ErrorCode, InvalidRequestError, KafkaError
from ..quotas.admin import changes_for, entity_path, ip_needs_lookup
from ..security.checks import alter_client_quotas_denied
from ._txn_common import respond_later

log = logging.getLogger("gregor.broker.quotas")

API_KEY = 49
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    entries = request["entries"]
    denied = alter_client_quotas_denied(broker, ctx)
    if denied is not None:
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": denied,
             "entity": entry["entity"]} for entry in entries]}
    validate_only = request["validate_only"]
    store = broker.entity_configs

    async def alter_one(entry) -> tuple[int, str | None]:
        try:
            path = entity_path(entry["entity"])
            host = ip_needs_lookup(path)
            if host is not None:
                try:
                    await asyncio.get_running_loop().getaddrinfo(host, None)
                except (OSError, UnicodeError):
                    raise InvalidRequestError(f"{host} is not a valid IP or resolvable host.")
            changes = changes_for(path, entry["ops"])
            if not validate_only and changes:
                await store.alter(path, changes)
            return 0, None
        except KafkaError as e:
            broker.metrics.error(API_KEY, e.name)
            return e.code, e.message
        except Exception as e:       # the store could not be written (ZooKeeper cut off, disk)
            log.exception("storing the client quotas of %s failed", entry["entity"])
            broker.metrics.error(API_KEY, "UNKNOWN_SERVER_ERROR")
            return -1, f"the quota change could not be stored: {e}; retry"

    async def run():
        return [await alter_one(entry) for entry in entries]

    def build(results) -> dict:
        results = results or [(-1, "the broker stopped before the change was made")] * len(entries)
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": code, "error_message": message, "entity": entry["entity"]}
            for (code, message), entry in zip(results, entries)]}
    return respond_later(run(), build)
