"""The cluster's entity config store against a real ZooKeeper: Kafka's znodes and change
notices, followed by every store; keys of other writers kept; kafka-configs' own writes (both
notice versions) understood; old notices purged."""
from __future__ import annotations

import asyncio
import json
import time

from gregor.broker.cluster import entity_configs_zk as ez
from gregor.broker.cluster.metadata_store import MetadataStore


async def _store(connect):
    meta = MetadataStore(connect, session_timeout_ms=6000)
    await meta.start()
    store = ez.ZkEntityConfigStore(meta)
    await store.start()
    return meta, store


async def _until(predicate, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def test_changes_reach_every_store_and_keep_other_keys(zk_connect):
    async def main():
        (ma, a), (mb, b) = await _store(zk_connect), await _store(zk_connect)
        seen = []
        b.listen(lambda path, config: seen.append((path, config)))
        try:
            await a.alter("users/alice", {"SCRAM-SHA-256": "salt=x,stored_key=y,"
                                          "server_key=z,iterations=4096"})
            await b.alter("users/alice", {"producer_byte_rate": "1024"})   # from the other
            await a.alter("users/alice/clients/<default>", {"request_percentage": "5.0"})
            await _until(lambda: len(a.get("users/alice")) == 2, "alice's two keys on a")
            await _until(lambda: b.get("users/alice/clients/<default>"), "the change on b")
            assert a.get("users/alice") == b.get("users/alice") == {
                "SCRAM-SHA-256": "salt=x,stored_key=y,server_key=z,iterations=4096",
                "producer_byte_rate": "1024"}
            # Kafka's layout, byte for byte
            data, _ = await ma._wait(ma.client.get_async("/config/users/alice"))
            assert json.loads(data) == {"version": 1, "config": a.get("users/alice")}
            names = await ma._wait(ma.client.get_children_async("/config/changes"))
            notices = [json.loads((await ma._wait(ma.client.get_async(
                f"/config/changes/{n}")))[0]) for n in sorted(names)]
            assert {"version": 2, "entity_path": "users/alice/clients/<default>"} in notices
            assert all(n.startswith("config_change_") for n in names)
            # removing every key leaves the znode with an empty map, as Kafka's
            await b.alter("users/alice/clients/<default>", {"request_percentage": None})
            await _until(lambda: not a.get("users/alice/clients/<default>"), "the removal")
            assert ("users/alice/clients/<default>", {}) in seen
            # a new store reads everything at start
            mc, c = await _store(zk_connect)
            assert c.entities() == {"users/alice": a.get("users/alice")}
            await c.close()
            await mc.close()
        finally:
            for s, m in ((a, ma), (b, mb)):
                await s.close()
                await m.close()
    asyncio.run(main())


def test_what_kafka_configs_writes_is_understood(zk_connect):
    async def main():
        meta, store = await _store(zk_connect)
        zk, wait = meta.client, meta._wait
        try:
            # kafka-configs --zookeeper: the entity znode, then a notice (version 2 ...)
            await wait(zk.create_async("/config/clients/app%201", json.dumps(
                {"version": 1, "config": {"producer_byte_rate": "2048"}}).encode()))
            await wait(zk.create_async("/config/changes/config_change_", json.dumps(
                {"version": 2, "entity_path": "clients/app%201"}).encode(), sequence=True))
            # ... or, from older tools, version 1 (type and name)
            await wait(zk.create_async("/config/users/<default>", json.dumps(
                {"version": 1, "config": {"consumer_byte_rate": "4096"}}).encode()))
            await wait(zk.create_async("/config/changes/config_change_", json.dumps(
                {"version": 1, "entity_type": "users", "entity_name": "<default>"}).encode(),
                sequence=True))
            await _until(lambda: store.get("clients/app%201") and store.get("users/<default>"),
                         "both entities")
            assert store.get("clients/app%201") == {"producer_byte_rate": "2048"}
            assert store.get("users/<default>") == {"consumer_byte_rate": "4096"}
            # a garbage notice is skipped, the next one still applies
            await wait(zk.create_async("/config/changes/config_change_", b"{nonsense",
                                       sequence=True))
            await wait(zk.set_async("/config/clients/app%201", json.dumps(
                {"version": 1, "config": {"producer_byte_rate": "1"}}).encode()))
            await wait(zk.create_async("/config/changes/config_change_", json.dumps(
                {"version": 2, "entity_path": "clients/app%201"}).encode(), sequence=True))
            await _until(lambda: store.get("clients/app%201") == {"producer_byte_rate": "1"},
                         "the later change")
        finally:
            await store.close()
            await meta.close()
    asyncio.run(main())


def test_old_notices_are_purged(zk_connect, monkeypatch):
    async def main():
        meta, store = await _store(zk_connect)
        try:
            await store.alter("clients/x", {"producer_byte_rate": "5"})
            monkeypatch.setattr(ez, "NOTICE_EXPIRATION_MS", 0)     # every notice is old now
            monkeypatch.setattr(ez, "PURGE_INTERVAL_S", 0.0)
            await store.alter("clients/y", {"producer_byte_rate": "6"})
            async def count():
                return len(await meta._wait(meta.client.get_children_async("/config/changes")))
            deadline = time.monotonic() + 20
            while await count() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert await count() == 0
            assert store.get("clients/y") == {"producer_byte_rate": "6"}
        finally:
            await store.close()
            await meta.close()
    asyncio.run(main())
