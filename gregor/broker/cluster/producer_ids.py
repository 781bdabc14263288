"""Cluster-unique producer ids: blocks of /latest_producer_id_block, handed out synchronously.

InitProducerId and the transaction coordinator ask for ids on the event loop and cannot wait
for ZooKeeper, so this keeps the current block and fetches the next one in the background once
half of it is used (Kafka's brokers prefetch the same way). Should a burst of producers drain
both before ZooKeeper answers, next_id() raises NoProducerIdBlock, which InitProducerId turns
into the retriable COORDINATOR_LOAD_IN_PROGRESS, as Kafka does while it waits for a block.
"""
from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("gregor.broker.cluster.producer_ids")

BLOCK_SIZE = 1000          # Kafka's: one ZooKeeper write per 1000 producers


class NoProducerIdBlock(OSError):
    retry_later = True


class ClusterProducerIds:
    def __init__(self, store, broker_id: int, block_size: int = BLOCK_SIZE):
        self.store = store
        self.broker_id = broker_id
        self.block_size = block_size
        self._next = 0
        self._end = 0              # exclusive
        self._spare: tuple[int, int] | None = None
        self._fetching: asyncio.Task | None = None

    async def prime(self) -> None:
        """Take the first block (broker start, before serving)."""
        if self._next >= self._end:
            b = await self.store.allocate_producer_ids(self.broker_id, self.block_size)
            self._next, self._end = b.first, b.last + 1

    def next_id(self) -> int:
        if self._next >= self._end:
            if self._spare is None:
                self._prefetch()
                raise NoProducerIdBlock("waiting for a producer id block from ZooKeeper; retry")
            self._next, self._end = self._spare
            self._spare = None
        pid = self._next
        self._next += 1
        if self._spare is None and self._end - self._next < self.block_size // 2:
            self._prefetch()
        return pid

    def _prefetch(self) -> None:
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.get_running_loop().create_task(self._fetch())

    async def _fetch(self) -> None:
        try:
            b = await self.store.allocate_producer_ids(self.broker_id, self.block_size)
        except Exception as e:
            log.warning("could not take a producer id block from ZooKeeper: %s", e)
            return
        self._spare = (b.first, b.last + 1)
