"""AsyncioProducer: the producer for asyncio code, over the same engine.

    async with AsyncioProducer({"bootstrap.servers": "127.0.0.1:9092"}) as p:
        md = await p.send("topic", b"value", key=b"k")      # RecordMetadata once acknowledged
        fut = p.send_nowait("topic", b"value")              # an asyncio.Future, no waiting

The engine's sender thread does the I/O; acknowledgements reach the event loop through
call_soon_threadsafe. A send() that must wait for buffer memory waits in a worker thread so
the event loop keeps running.

Transactions (with `transactional.id`) take aiokafka's shape over the engine's transaction
manager: start() initialises the id (fencing older instances), then

    async with p.transaction():                          # begin; commit, or abort on error
        await p.send("out", b"v")
        await p.send_offsets_to_transaction({("in", 0): 42}, "group")

or begin_transaction() / await commit_transaction() / await abort_transaction().
"""
from __future__ import annotations

import asyncio

from .producer import Producer


class AsyncioProducer:
    def __init__(self, config: dict | None = None, *, loop=None, **kwargs):
        self._engine = Producer(config, **kwargs)
        self._loop = loop

    @property
    def engine(self) -> Producer:
        return self._engine

    def _get_loop(self):
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    async def start(self) -> None:
        """aiokafka's start(): a transactional producer registers its transactional.id here
        (init_transactions); any other producer is ready once constructed."""
        if self._engine._txn is not None and self._engine._txn.transactional \
                and self._engine._txn.txn_state == "uninitialized":
            await self.init_transactions()

    # -- transactions (the engine's calls, waited on in a worker thread) ------------------
    async def init_transactions(self, timeout: float | None = None) -> None:
        await self._get_loop().run_in_executor(None, self._engine.init_transactions, timeout)

    def begin_transaction(self) -> None:
        self._engine.begin_transaction()

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._get_loop().run_in_executor(None, self._engine.commit_transaction, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._get_loop().run_in_executor(None, self._engine.abort_transaction, timeout)

    async def send_offsets_to_transaction(self, offsets, group_metadata,
                                          timeout: float | None = None) -> None:
        """`offsets`: the next offsets to consume ({(topic, partition): offset} or
        TopicPartitions); `group_metadata`: the group id or the consumer's group metadata."""
        await self._get_loop().run_in_executor(
            None, self._engine.send_offsets_to_transaction, offsets, group_metadata, timeout)

    def transaction(self) -> "_Transaction":
        """`async with p.transaction():` begins a transaction, commits it when the block
        ends, and aborts it when the block raises (then re-raises)."""
        return _Transaction(self)

    def send_nowait(self, topic, value=None, key=None, headers=None, partition=None,
                    timestamp_ms=None) -> asyncio.Future:
        """Queue a record without awaiting; the returned asyncio.Future gives RecordMetadata.
        Raises KafkaTimeoutError after max.block.ms if buffer memory stays full."""
        loop = self._get_loop()
        afut = loop.create_future()

        def done(md, err):
            loop.call_soon_threadsafe(_settle, afut, md, err)
        self._engine.send(topic, value, key, headers, partition, timestamp_ms, done)
        return afut

    async def send(self, topic, value=None, key=None, headers=None, partition=None,
                   timestamp_ms=None):
        """Send one record and return its RecordMetadata once acknowledged."""
        eng = self._engine
        if eng._pool.available < eng._acc.batch_size or eng._nparts.get(topic) is None:
            # send() may block (metadata or memory): keep the event loop free.
            loop = self._get_loop()
            afut = loop.create_future()

            def done(md, err):
                loop.call_soon_threadsafe(_settle, afut, md, err)
            await loop.run_in_executor(None, lambda: eng.send(
                topic, value, key, headers, partition, timestamp_ms, done))
            return await afut
        return await self.send_nowait(topic, value, key, headers, partition, timestamp_ms)

    send_and_wait = send

    async def send_batch(self, topic, values, keys=None, partition=None):
        loop = self._get_loop()
        res = await loop.run_in_executor(
            None, lambda: self._engine.send_batch(topic, values, keys, partition))
        return await loop.run_in_executor(None, res.result)

    async def flush(self, timeout: float | None = None) -> None:
        await self._get_loop().run_in_executor(None, self._engine.flush, timeout)

    async def close(self, timeout: float | None = None) -> None:
        await self._get_loop().run_in_executor(None, self._engine.close, timeout)

    stop = close

    async def partitions_for(self, topic: str):
        return await self._get_loop().run_in_executor(None, self._engine.partitions_for, topic)

    def metrics(self) -> dict:
        return self._engine.metrics()

    async def __aenter__(self):
        self._get_loop()
        return self

    async def __aexit__(self, *exc):
        await self.close()


class _Transaction:
    def __init__(self, producer: AsyncioProducer):
        self._p = producer

    async def __aenter__(self):
        self._p.begin_transaction()
        return self

    async def __aexit__(self, exc_type, exc, tb):
        if exc_type is None:
            await self._p.commit_transaction()
        else:
            # a fenced (fatal) producer cannot abort: the error it raised says to close it
            if self._p.engine._txn.txn_state != "fatal_error":
                await self._p.abort_transaction()
        return False


def _settle(afut: asyncio.Future, md, err) -> None:
    if afut.done():
        return
    if err is not None:
        afut.set_exception(err)
    else:
        afut.set_result(md)
