"""An internal topic as a coordinator's durable store (`__transaction_state`, and the same shape
serves `__consumer_offsets`).

A coordinator keeps its state in memory and writes every change as a keyed record to its
partition of the topic; at start (or when it becomes the partition's leader) it replays the
partition to rebuild that state. Writes go through the partition's normal append path and are
answered only once committed the way acks=all is (high watermark, and the group-commit fsync
when gregor.fsync.acks.all is on), so an acknowledged change survives kill -9 and power loss.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Iterator

from ..protocol.errors import (ErrorCode, NotLeaderOrFollowerError, RequestTimedOutError,
                               error_for_code)
from ..protocol.records.batch import decode_batches, encode_batch
from .purgatory import DelayedOperation

log = logging.getLogger("gregor.broker.coordinator_log")

# What one replay read asks the log for at a time: bounded memory while loading.
LOAD_CHUNK_BYTES = 1 << 20


class CoordinatorLog:
    def __init__(self, broker, topic: str, num_partitions: int, configs: dict[str, str],
                 commit_timeout_ms: int = 5000):
        self.broker = broker
        self.topic = topic
        self.num_partitions = num_partitions
        self.configs = configs
        self.commit_timeout_ms = commit_timeout_ms
        # cluster mode: partition -> (leader epoch its coordinator loaded it at, load number).
        # A write is taken only while we still lead that partition at that epoch (Kafka's
        # coordinator epoch): a coordinator left running on stale state (a broker out of the
        # cluster, a leadership moved meanwhile) must never append to a partition another
        # broker leads. The load number tells one loading from the next at the same epoch (a
        # broker that stepped out and is restated as the leader it was).
        self._owned: dict[int, tuple[int, int]] = {}
        self._loads = 0

    def own(self, partition: int, leader_epoch: int) -> None:
        self._loads += 1
        self._owned[partition] = (leader_epoch, self._loads)

    def disown(self, partition: int) -> None:
        self._owned.pop(partition, None)

    def ownership(self, partition: int) -> tuple[int, int] | None:
        """The current loading's token, None when not owned (or on a single broker)."""
        return self._owned.get(partition)

    def exists(self) -> bool:
        return self.broker.store.get(self.topic) is not None

    def ensure(self) -> None:
        """Create the topic if it is missing (internal topics bypass the name rules clients
        are held to)."""
        if not self.exists():
            self.broker.create_topic(self.topic, self.num_partitions, dict(self.configs))
            log.info("created internal topic %s with %d partitions", self.topic,
                     self.num_partitions)

    def batches(self, partition: int) -> Iterator:
        """Every committed batch of the partition, control batches included, in log order."""
        p = self.broker.replica_manager.get(self.topic, partition)
        if p is None:
            return
        # To the log end: a new leader's high watermark waits for its followers' next
        # fetches, but it was in the ISR, so its log holds every committed write.
        offset, end = p.log.log_start_offset, p.log.log_end_offset
        while offset < end:
            data = p.log.read(offset, LOAD_CHUNK_BYTES, max_offset=end)
            if not data:
                break
            for b in decode_batches(data):
                if b.last_offset >= offset:
                    yield b
                offset = max(offset, b.last_offset + 1)

    def records(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        """(key, value) of every committed data record, in log order."""
        for b in self.batches(partition):
            if b.is_control:
                continue
            for r in b.records:
                if r.key is not None:
                    yield r.key, r.value

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
                     producer_id: int = -1, producer_epoch: int = -1,
                     base_sequence: int = -1, transactional: bool = False,
                     origin: str = "client", leader_epoch: int | None = None) -> int:
        """Append the records as one batch and wait until they are committed; returns the last
        offset. Raises a KafkaError when the write fails or is not committed in time.
        origin="coordinator" skips the producer sequence rules (a coordinator writing a
        transaction's offsets for a producer, as Kafka's coordinator-origin appends do)."""
        fut = asyncio.get_running_loop().create_future()

        def done(code: int, last_offset: int) -> None:
            if not fut.done():
                fut.set_result((code, last_offset))
        p = self.append_then(partition, records, done, producer_id=producer_id,
                             producer_epoch=producer_epoch, base_sequence=base_sequence,
                             transactional=transactional, origin=origin,
                             leader_epoch=leader_epoch)
        code, last = await fut
        if code:
            raise _commit_error(p, code, last + 1, self.commit_timeout_ms)
        return last

    def append_then(self, partition: int, records: list[tuple[bytes, bytes | None]],
                    done: Callable[[int, int], None], *, producer_id: int = -1,
                    producer_epoch: int = -1, base_sequence: int = -1,
                    transactional: bool = False, origin: str = "client",
                    leader_epoch: int | None = None, durable: bool = True):
        """append() without a coroutine: append now, then call done(error_code, last_offset)
        once the batch is committed (error_code REQUEST_TIMED_OUT when it is not within the
        commit timeout). Raises a KafkaError, without calling done, when the append itself
        fails. Returns the partition. The group coordinator's store uses this: one callback
        per batch, no task or future per write.

        In a cluster the write is refused (NotLeaderOrFollowerError, nothing appended) unless
        this broker leads the partition at the epoch its coordinator loaded it at, and at
        leader_epoch when given (the epoch the writer's state was loaded at).

        durable=False: done is called once the batch is committed as acks=all is, less the
        local fsync (gregor.fsync.acks.all): it is in the log (the page cache), so it survives
        kill -9, and the deferred fsync round of acks=1 data makes it durable shortly after.
        For state whose loss is a redelivery, not a loss of data (share-group state)."""
        p = self.broker.replica_manager.get(self.topic, partition)
        if p is None:
            raise NotLeaderOrFollowerError(f"{self.topic}-{partition} is not hosted here")
        self._check_owner(p, partition, leader_epoch)
        now = int(time.time() * 1000)
        data = encode_batch([(now, k, v, []) for k, v in records], producer_id=producer_id,
                            producer_epoch=producer_epoch, base_sequence=base_sequence,
                            transactional=transactional)
        info = p.append_records_to_leader(bytearray(data), -1, now, origin=origin,
                                          durable=durable)
        last = info.last_offset
        op = _DelayedCommit(self.commit_timeout_ms, p, last + 1,
                            lambda code: done(code, last), durable=durable)
        self.broker.replica_manager.produce_purgatory.try_complete_else_watch(op, [p.key])
        return p

    def _check_owner(self, p, partition: int, leader_epoch: int | None) -> None:
        if self.broker.cluster is None:
            return                          # one broker: it leads every partition
        token = self._owned.get(partition)
        owned = token[0] if token is not None else None
        if not p.is_leader or owned is None or owned != p.leader_epoch \
                or (leader_epoch is not None and leader_epoch != owned):
            raise NotLeaderOrFollowerError(
                f"{self.topic}-{partition}: not written, this broker's coordinator state is "
                f"not the partition's current leadership (leading: {p.is_leader}, leader "
                f"epoch {p.leader_epoch}, loaded at {owned}, writer's epoch {leader_epoch})")


async def wait_committed(broker, partition, end_offset: int, timeout_ms: int) -> None:
    """Wait until everything below end_offset of the partition is committed (as acks=all)."""
    fut = asyncio.get_running_loop().create_future()

    def done(code: int) -> None:
        if not fut.done():
            fut.set_result(code)
    op = _DelayedCommit(timeout_ms, partition, end_offset, done)
    broker.replica_manager.produce_purgatory.try_complete_else_watch(op, [partition.key])
    code = await fut
    if code:
        raise _commit_error(partition, code, end_offset, timeout_ms)


def _commit_error(partition, code: int, end_offset: int, timeout_ms: int) -> Exception:
    if code == ErrorCode.REQUEST_TIMED_OUT:
        return RequestTimedOutError(f"{partition.topic}-{partition.index} did not commit "
                                    f"offset {end_offset - 1} within {timeout_ms} ms")
    return error_for_code(code)


class _DelayedCommit(DelayedOperation):
    """Waits until the partition commits end_offset, then calls done(error_code)."""

    def __init__(self, timeout_ms, partition, end_offset, done, durable: bool = True):
        super().__init__(timeout_ms)
        self.durable = durable
        self.partition = partition
        self.end_offset = end_offset
        self.done = done
        self.code = ErrorCode.NONE

    def try_complete(self) -> bool:
        done, code = self.partition.check_enough_replicas_reach_offset(self.end_offset,
                                                                       self.durable)
        if not done:
            return False
        self.code = code
        return self.force_complete()

    def on_expiration(self) -> None:
        self.code = ErrorCode.REQUEST_TIMED_OUT

    def on_complete(self) -> None:
        self.done(self.code)
