"""AsyncioConsumer: the Consumer's API as coroutines (`records = await c.poll(1.0)`).

The blocking Consumer runs on one private worker thread; each coroutine hands a call to that
thread and awaits it, so the event loop never blocks and the consumer keeps its one-thread
rule. Long polls cost nothing on the loop, and the fetch pipeline is the same as the sync one.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from typing import Any

from .consumer import Consumer


class AsyncioConsumer:
    def __init__(self, config: dict | None = None, **kwargs):
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="gregor-asyncio-consumer")
        self._consumer = Consumer(config, **kwargs)
        self._closed = False

    @property
    def consumer(self) -> Consumer:
        """The underlying blocking Consumer (do not call it from the event loop thread)."""
        return self._consumer

    async def _call(self, fn, *args, **kwargs) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor,
                                          functools.partial(fn, *args, **kwargs))

    async def assign(self, partitions) -> None:
        await self._call(self._consumer.assign, list(partitions))

    def assignment(self):
        return self._consumer.assignment()

    # -- group mode: callbacks run on the worker thread, inside poll(), as in the sync one --
    async def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        await self._call(self._consumer.subscribe, topics, on_assign, on_revoke, on_lost)

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def commit(self, message=None, offsets=None, asynchronous: bool = False):
        fut = await self._call(self._consumer.commit, message, offsets, asynchronous)
        return asyncio.wrap_future(fut) if asynchronous else fut

    async def committed(self, partitions, timeout: float | None = None) -> dict:
        return await self._call(self._consumer.committed, list(partitions), timeout)

    async def poll(self, timeout: float = 1.0, max_records: int | None = None):
        return await self._call(self._consumer.poll, timeout, max_records)

    async def poll_batches(self, timeout: float = 1.0, max_records: int | None = None, *,
                           arrow: bool = False):
        return await self._call(self._consumer.poll_batches, timeout, max_records, arrow=arrow)

    async def seek(self, topic, partition=None, offset=None) -> None:
        await self._call(self._consumer.seek, topic, partition, offset)

    async def seek_to_beginning(self, partitions=None) -> None:
        await self._call(self._consumer.seek_to_beginning, partitions)

    async def seek_to_end(self, partitions=None) -> None:
        await self._call(self._consumer.seek_to_end, partitions)

    async def position(self, topic, partition=None, timeout: float | None = None) -> int:
        return await self._call(self._consumer.position, topic, partition, timeout)

    async def pause(self, *partitions) -> None:
        await self._call(self._consumer.pause, *partitions)

    async def resume(self, *partitions) -> None:
        await self._call(self._consumer.resume, *partitions)

    def paused(self):
        return self._consumer.paused()

    async def offsets_for_times(self, timestamps: dict, timeout: float | None = None) -> dict:
        return await self._call(self._consumer.offsets_for_times, timestamps, timeout)

    async def beginning_offsets(self, partitions, timeout: float | None = None) -> dict:
        return await self._call(self._consumer.beginning_offsets, list(partitions), timeout)

    async def end_offsets(self, partitions, timeout: float | None = None) -> dict:
        return await self._call(self._consumer.end_offsets, list(partitions), timeout)

    async def list_topics(self, timeout: float | None = None) -> dict:
        return await self._call(self._consumer.list_topics, timeout)

    def highwater(self, topic: str, partition: int) -> int:
        return self._consumer.highwater(topic, partition)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._consumer.wakeup()
        try:
            await self._call(self._consumer.close)
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncioConsumer":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        while not self._closed:
            for record in await self.poll(1.0):
                yield record
