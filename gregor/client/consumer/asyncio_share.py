"""`AsyncioShareConsumer`: the ShareConsumer (KIP-932 share groups) as coroutines.

    async with AsyncioShareConsumer("workers", bootstrap_servers="localhost:9092") as c:
        await c.subscribe(["jobs"])
        async for record in c:          # implicit mode: accepted by the next poll
            await handle(record)

As AsyncioConsumer does, it runs the blocking ShareConsumer on one private worker thread and
awaits each call there, so the event loop never blocks and the share consumer keeps its
one-thread rule (its heartbeat is sent from poll(), as in the blocking one).

acknowledge() and acknowledge_offset() are plain calls, checked on the loop's thread against
the records of the last poll and handed to the worker at the start of the next poll,
commit_sync() or close(), which is where the blocking consumer takes them too (they ride on
the next ShareFetch, or ShareAcknowledge on commit and close). Acknowledge between polls: a
record acknowledged while a poll is running belongs to the poll before it.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from typing import Any

from .share import ACCEPT, REJECT, RELEASE, ShareConsumer, ShareRecord

__all__ = ["AsyncioShareConsumer", "ACCEPT", "RELEASE", "REJECT", "ShareRecord"]


class AsyncioShareConsumer:
    def __init__(self, group_id: str, bootstrap_servers: str = "localhost:9092", **kwargs):
        self._consumer = ShareConsumer(group_id, bootstrap_servers, **kwargs)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="gregor-asyncio-share-consumer")
        self._lock = threading.Lock()            # the queue is filled here, emptied there
        self._queued: list[tuple] = []           # (topic, partition, offset, type)
        self._in_flight: set[tuple] = set()      # the last poll's records not acknowledged
        self._closed = False

    @property
    def consumer(self) -> ShareConsumer:
        """The underlying blocking ShareConsumer (do not call it from the event loop thread)."""
        return self._consumer

    @property
    def group_id(self) -> str:
        return self._consumer.group_id

    @property
    def member_id(self) -> str:
        return self._consumer.member_id

    @property
    def mode(self) -> str:
        return self._consumer.mode

    async def _call(self, fn, *args) -> Any:
        if self._closed:
            raise RuntimeError("the share consumer is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(
            self._on_worker, fn, *args))

    def _on_worker(self, fn, *args):
        with self._lock:
            queued, self._queued = self._queued, []
        for topic, partition, offset, ack_type in queued:
            self._consumer.acknowledge_offset(topic, partition, offset, ack_type)
        return fn(*args)

    # -- membership --------------------------------------------------------------------------

    async def subscribe(self, topics) -> None:
        await self._call(self._consumer.subscribe, list(topics))

    def subscription(self) -> list[str]:
        return self._consumer.subscription()

    # -- fetching ----------------------------------------------------------------------------

    async def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        """The next records (ShareRecord, with delivery_count). In implicit mode this accepts
        what the last poll returned; in explicit mode every one of them must have been
        acknowledged first (RuntimeError otherwise, as the blocking consumer raises)."""
        if self.mode == "explicit" and self._in_flight:
            raise RuntimeError("explicit mode: acknowledge every record of the last poll "
                               "before polling again")
        records = await self._call(self._consumer.poll, timeout)
        self._in_flight = {(r.topic, r.partition, r.offset) for r in records}
        return records

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        while not self._closed:
            for record in await self.poll(1.0):
                yield record

    # -- acknowledging -----------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord, ack_type: int = ACCEPT) -> None:
        if self.mode != "explicit":
            raise RuntimeError("acknowledge() is for acknowledgement_mode='explicit'; in "
                               "implicit mode the next poll accepts what the last returned")
        self.acknowledge_offset(record.topic, record.partition, record.offset, ack_type)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           ack_type: int = ACCEPT) -> None:
        """Acknowledge one record of the last poll (sent with the next poll, commit or
        close)."""
        if ack_type not in (ACCEPT, RELEASE, REJECT):
            raise ValueError("ack_type is ACCEPT (1), RELEASE (2) or REJECT (3)")
        key = (topic, partition, offset)
        if key not in self._in_flight:
            raise RuntimeError(f"{topic}-{partition}@{offset} is not in flight here")
        self._in_flight.discard(key)
        with self._lock:
            self._queued.append((topic, partition, offset, ack_type))

    # -- committing and closing --------------------------------------------------------------

    async def commit_sync(self) -> dict:
        """Send the acknowledgements now (ShareAcknowledge) and wait for the answers:
        {(topic, partition): error or None}. In implicit mode the last poll's records are
        accepted first."""
        results = await self._call(self._consumer.commit_sync)
        if self.mode == "implicit":
            self._in_flight = set()
        return results

    async def close(self) -> None:
        """Acknowledge (implicit mode: accept) what is due, give back what is held, leave the
        group; a poll still running finishes first."""
        if self._closed:
            return
        try:
            await self._call(self._consumer.close)
        finally:
            self._closed = True
            self._in_flight = set()
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncioShareConsumer":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
