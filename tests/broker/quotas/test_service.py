"""The quota service follows the store: quotas come into force and go, and the server only
routes requests through the enforcer while any quota is configured."""
from __future__ import annotations

import asyncio

from gregor.broker.config import BrokerConfig
from gregor.broker.entity_configs.file_store import FileEntityConfigStore
from gregor.broker.quotas.service import QuotaService


class _Server:
    quotas = "untouched"


def test_the_enforcer_is_on_exactly_while_a_quota_exists(tmp_path):
    async def main():
        store = FileEntityConfigStore(tmp_path).load()
        await store.alter("users/alice", {"SCRAM-SHA-256": "salt=..."})   # not a quota
        server = _Server()
        service = QuotaService(BrokerConfig({}))
        service.start(store, server)
        try:
            assert server.quotas is None
            await store.alter("users/alice/clients/<default>", {"request_percentage": "50"})
            assert server.quotas is service.enforcer and service.request.enabled
            budget = service.request.budget("alice", "app")
            assert budget.tags == ("alice", "app") and budget.limit == 50.0
            await store.alter("users/alice/clients/<default>", {"request_percentage": "20"})
            assert budget.limit == 20.0                      # the same budget, new limit
            await store.alter("ips/<default>", {"connection_creation_rate": "5"})
            await store.alter("users/alice/clients/<default>", {"request_percentage": None})
            assert server.quotas is service.enforcer         # the ip quota remains
            assert service.request.budget("alice", "app") is None
            await store.alter("ips/<default>", {"connection_creation_rate": None})
            assert server.quotas is None
            # a value no quota can have is ignored, not applied
            await store.alter("clients/x", {"producer_byte_rate": "-3"})
            assert server.quotas is None
        finally:
            service.close()
    asyncio.run(main())


def test_quotas_written_before_start_are_in_force_at_start(tmp_path):
    FileEntityConfigStore(tmp_path).alter_now("clients/app%201", {"producer_byte_rate": "10"})

    async def main():
        server = _Server()
        service = QuotaService(BrokerConfig({}))
        service.start(FileEntityConfigStore(tmp_path).load(), server)
        try:
            assert server.quotas is service.enforcer
            assert service.produce.budget("ANONYMOUS", "app 1").limit == 10.0
            assert service.produce.budget("ANONYMOUS", "app 2") is None
        finally:
            service.close()
    asyncio.run(main())
