"""Cluster producer ids: synchronous hand-out over ZooKeeper blocks, prefetched at half."""
from __future__ import annotations

import asyncio

import pytest

from gregor.broker.cluster.producer_ids import ClusterProducerIds, NoProducerIdBlock
from gregor.broker.cluster.znodes import ProducerIdBlock


class FakeStore:
    def __init__(self):
        self.next = 0
        self.calls = 0
        self.gate: asyncio.Event | None = None

    async def allocate_producer_ids(self, broker_id, size):
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        b = ProducerIdBlock(broker_id, self.next, self.next + size - 1)
        self.next += size
        return b


def test_ids_are_consecutive_across_blocks_and_prefetched():
    async def main():
        store = FakeStore()
        ids = ClusterProducerIds(store, 1, block_size=10)
        await ids.prime()
        got = []
        for _ in range(25):
            got.append(ids.next_id())
            await asyncio.sleep(0)          # let a prefetch run
        assert got == list(range(25)) and store.calls == 3
    asyncio.run(main())


def test_no_block_yet_is_a_retriable_error():
    async def main():
        store = FakeStore()
        ids = ClusterProducerIds(store, 1, block_size=2)
        await ids.prime()
        store.gate = asyncio.Event()        # ZooKeeper slow to answer
        assert [ids.next_id(), ids.next_id()] == [0, 1]
        with pytest.raises(NoProducerIdBlock) as e:
            ids.next_id()
        assert e.value.retry_later
        store.gate.set()
        await asyncio.sleep(0.01)
        assert ids.next_id() == 2
    asyncio.run(main())
