"""The partitions this broker hosts, the purgatories that wait on them, and the group commit.

Appends go to the page cache at once (so an acks=1 response only waits for the local append,
and the record survives a kill -9 of the broker process). With gregor.fsync.before.commit
(the default), each partition appended to during one event-loop iteration is fsynced once at
the end of that iteration and only then is its high watermark moved: acks=all producers and
consumers never see records that a power loss could take away, and a burst of produce requests
shares one fsync per partition. Without it, the high watermark moves right after the append,
as Kafka does on a single replica.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Iterable

from .partition import Partition
from .purgatory import Purgatory

log = logging.getLogger("gregor.broker.replica_manager")


class ReplicaManager:
    def __init__(self, broker_id: int, *, fsync_before_commit: bool = True):
        self.broker_id = broker_id
        self.fsync_before_commit = fsync_before_commit
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.produce_purgatory = Purgatory("produce")
        self.fetch_purgatory = Purgatory("fetch")
        self._dirty: dict[Partition, None] = {}     # insertion-ordered set
        self._flush_handle: asyncio.Handle | None = None
        self.flushes = 0                             # fsync rounds, for tests and metrics

    # -- partitions ------------------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def add(self, partition: Partition) -> None:
        partition.manager = self
        self.partitions[partition.key] = partition

    def remove(self, key: tuple[str, int]) -> Partition | None:
        p = self.partitions.pop(key, None)
        if p is not None:
            p.deleted = True
            self._dirty.pop(p, None)
            self.notify(p)
        return p

    def topic_partitions(self, topic: str) -> list[Partition]:
        return sorted((p for p in self.partitions.values() if p.topic == topic),
                      key=lambda p: p.index)

    def purgatories(self) -> Iterable[Purgatory]:
        return (self.produce_purgatory, self.fetch_purgatory)

    # -- commit ----------------------------------------------------------------------------

    def appended(self, partition: Partition) -> None:
        """Called by a partition after a (non-duplicate) append."""
        if not self.fsync_before_commit:
            if partition.maybe_advance_high_watermark():
                self.notify(partition)
            return
        self._dirty[partition] = None
        if self._flush_handle is None:
            # call_soon runs after every callback already queued for this loop iteration, so
            # all produce requests read in this iteration share the fsync.
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush_dirty)

    def _flush_dirty(self) -> None:
        self._flush_handle = None
        dirty, self._dirty = self._dirty, {}
        if dirty:
            self.flushes += 1
        for p in dirty:
            if p.deleted:
                continue
            try:
                p.log.flush()
            except Exception:
                # The data stays below the HW: acks=all producers time out and retry,
                # consumers do not see it. The next append tries the flush again.
                log.exception("fsync of %s-%d failed; its high watermark stays at %d",
                              p.topic, p.index, p.high_watermark)
                continue
            if p.maybe_advance_high_watermark():
                self.notify(p)

    def notify(self, partition: Partition) -> None:
        """The partition's HW moved (or it went away): wake whoever waits on it."""
        self.produce_purgatory.check_and_complete(partition.key)
        self.fetch_purgatory.check_and_complete(partition.key)

    def flush_all(self) -> None:
        """Flush every partition and commit what is there (shutdown)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._dirty.clear()
        for p in list(self.partitions.values()):
            try:
                p.log.flush()
            except Exception:
                log.exception("flush of %s-%d failed", p.topic, p.index)
                continue
            if p.maybe_advance_high_watermark():
                self.notify(p)

    def close_all(self) -> None:
        for p in list(self.partitions.values()):
            try:
                p.log.close()
            except Exception:
                log.exception("closing the log of %s-%d failed", p.topic, p.index)
