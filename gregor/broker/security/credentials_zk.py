"""SCRAM credentials of a cluster for a process that is not a broker (`gregor users
--zookeeper`, with the brokers up or down).

The brokers keep credentials in the cluster's entity config store (Kafka's /config/users
znodes with change notices, gregor/broker/cluster/entity_configs_zk.py): this opens the same
store on a ZooKeeper session of its own, with an event loop on a thread, and offers the
blocking calls a command needs. A change is in force on every running broker moments after
it returns.
"""
from __future__ import annotations

import asyncio
import threading
import time

from kazoo.exceptions import NoAuthError

from ..cluster.entity_configs_zk import ZkEntityConfigStore
from ..cluster.metadata_store import MetadataStore, StoreError
from .credentials import CredentialStoreError, ScramCredentials


class ZkCredentials(ScramCredentials):
    def __init__(self, store, meta, loop, thread):
        super().__init__(store)
        self._meta, self._loop, self._thread = meta, loop, thread

    @classmethod
    def connect(cls, connect: str, timeout: float = 15.0, security=None) -> "ZkCredentials":
        """security: the brokers' ZooKeeper login and znode ACLs (zk_security.ZkSecurity),
        needed to write on a cluster whose znodes are protected (zookeeper.set.acl)."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="gregor-zk-credentials",
                                  daemon=True)
        thread.start()
        meta = MetadataStore(connect, connection_timeout_ms=int(timeout * 1000),
                             security=security)

        async def open_store():
            await meta.start()
            store = ZkEntityConfigStore(meta)
            await store.start()
            return store
        try:
            store = asyncio.run_coroutine_threadsafe(open_store(), loop).result(timeout + 5)
        except (StoreError, Exception) as e:
            asyncio.run_coroutine_threadsafe(meta.close(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            if isinstance(e, NoAuthError):
                raise CredentialStoreError(
                    f"ZooKeeper at {connect} refused to show the users: this cluster's znodes "
                    "are protected (zookeeper.set.acl); log in as the brokers do (their "
                    "gregor.zookeeper.jaas.file)") from None
            raise CredentialStoreError(f"cannot reach ZooKeeper at {connect}: {e}") from None
        return cls(store, meta, loop, thread)

    def write_user_configs(self, changes: dict[str, dict[str, str]]) -> None:
        asyncio.run_coroutine_threadsafe(self.write(changes), self._loop).result(60)

    def wait_for(self, predicate, timeout: float = 5.0) -> bool:
        """Until predicate(self) holds (a change made elsewhere reaching this copy)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(0.02)
        return predicate(self)

    def close(self) -> None:
        async def shut():
            await self.store.close()
            await self._meta.close()
        try:
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
