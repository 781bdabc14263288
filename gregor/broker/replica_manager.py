"""The partitions this broker hosts, the purgatories that wait on them, and the group commit.

An append goes to the page cache at once and moves the partition's high watermark right away
(one replica: nothing else to wait for), so an acks=1 response only waits for the local append,
the record is visible to consumers immediately, and it survives a kill -9 of the broker.

With gregor.fsync.acks.all (the default), acks=all producers additionally wait until their
records are fsynced, so an acks=all acknowledgement survives a power loss too. A write someone
waits on (acks=all, coordinator records, transaction markers) starts an fsync round at once;
acks=0/1 appends, which nobody waits on, start one at most ACKS1_SYNC_DELAY_S later (or ride an
earlier round): a power loss takes at most about that much acknowledged acks=1 data, and a
stream of small acks=1 requests no longer pays a round (a thread hand-off and an fsync) each.
The fsyncs are a group commit run off the event loop: the partitions appended to since the
last round hand a sync ticket (duplicated descriptors, see gregor/log/flush.py) to one worker
thread; while it fsyncs, the loop keeps serving requests, and whatever they append forms the
next round. Each round moves each partition's durable offset to what its ticket covered and wakes the acks=all
producers waiting on it. Without the setting, acks=all completes right after the append, as on
a single-replica Kafka partition (fsync then only follows log.flush.interval.messages/ms).
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

from .partition import Partition
from .purgatory import Purgatory

log = logging.getLogger("gregor.broker.replica_manager")

# How long acks=0/1 data may wait for its fsync: short enough to bound what a power loss takes,
# long enough that a busy acks=1 stream pays ~20 rounds a second, not one per request.
ACKS1_SYNC_DELAY_S = 0.05


class ReplicaManager:
    def __init__(self, broker_id: int, *, fsync_acks_all: bool = True):
        self.broker_id = broker_id
        self.fsync_acks_all = fsync_acks_all
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.produce_purgatory = Purgatory("produce")
        self.fetch_purgatory = Purgatory("fetch")
        self._dirty: dict[Partition, None] = {}     # insertion-ordered set
        self._flush_handle: asyncio.Handle | None = None
        self._flushing = False                       # a round is running on the worker
        self._sync_wanted = False                    # someone waits on an fsync
        self._sync_timer: asyncio.TimerHandle | None = None   # the acks=0/1 round, deferred
        self._executor: ThreadPoolExecutor | None = None
        self.flushes = 0                             # fsync rounds, for tests and metrics
        self.closed = False

    # -- partitions ------------------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def add(self, partition: Partition) -> None:
        partition.manager = self
        partition.wait_for_durable = self.fsync_acks_all
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

    def appended(self, partition: Partition, sync: bool = True) -> None:
        """Called by a partition after a (non-duplicate) append; sync=False when nobody will
        wait for it to be durable (acks=0/1)."""
        if partition.maybe_advance_high_watermark():
            if partition.wait_for_durable and partition.fsync_counts():
                # Writes waiting in the produce purgatory wait for the fsync round (its end
                # wakes them), not for the HW: re-checking each of them on every append made
                # a burst of n pipelined writes cost O(n^2). Only long-polling fetches may
                # answer now.
                self.fetch_purgatory.check_and_complete(partition.key)
            else:
                self.notify(partition)
        elif partition.followers:
            # replicated: the HW waits for the followers, whose parked fetches want the
            # new records now
            self.fetch_purgatory.check_and_complete(partition.key)
        if not self.fsync_acks_all:
            return
        self._dirty[partition] = None
        if not sync:
            self._defer_sync()
            return
        self._sync_wanted = True
        if self._flush_handle is None and not self._flushing:
            # call_soon runs after every callback already queued for this loop iteration, so
            # all produce requests read in this iteration share the round.
            self._flush_handle = asyncio.get_running_loop().call_soon(self._start_flush)

    def _defer_sync(self) -> None:
        if self._sync_timer is None and not self.closed:
            self._sync_timer = asyncio.get_running_loop().call_later(ACKS1_SYNC_DELAY_S,
                                                                     self._deferred_sync)

    def _deferred_sync(self) -> None:
        self._sync_timer = None
        if self._dirty and not self.closed:
            self._sync_wanted = True
            if self._flush_handle is None and not self._flushing:
                self._start_flush()

    def _start_flush(self) -> None:
        self._flush_handle = None
        if self._flushing or not self._dirty or not self._sync_wanted:
            return
        self._sync_wanted = False
        dirty, self._dirty = self._dirty, {}
        tickets = []
        for p in dirty:
            if p.deleted:
                continue
            try:
                # The active segment's indexes are rebuilt by recovery after an unclean
                # stop: this round fsyncs the log file alone (Log.begin_sync).
                t = p.log.begin_sync(force=True, active_indexes=False)
            except Exception:
                log.exception("could not start the fsync of %s-%d", p.topic, p.index)
                continue
            if t is not None:
                tickets.append((p, t))
        if not tickets:
            return
        self._flushing = True
        self.flushes += 1
        if self._executor is None:
            # One thread: rounds run one after another, each fsync releases the GIL.
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gregor-fsync")
        fut = asyncio.get_running_loop().run_in_executor(self._executor, _run_tickets, tickets)
        fut.add_done_callback(lambda f: self._flush_done(tickets, f))

    def _flush_done(self, tickets, fut) -> None:
        self._flushing = False
        if self.closed:
            return
        failed = fut.exception() if not fut.cancelled() else asyncio.CancelledError()
        if failed is None:
            failed = fut.result()
        for p, t in tickets:
            if isinstance(failed, BaseException) or p in failed:
                # acks=all producers keep waiting (and time out if the disk stays broken);
                # the partition is synced again next round.
                self._dirty[p] = None
                self._sync_wanted = True
                continue
            if p.deleted:
                continue
            p.log.finish_sync(t)
            if p.mark_durable(t.offset):
                self.produce_purgatory.check_and_complete(p.key)
        if self._dirty and not self._sync_wanted:
            self._defer_sync()                  # acks=0/1 data that arrived meanwhile
        if self._sync_wanted and self._dirty and self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._start_flush)

    def notify(self, partition: Partition) -> None:
        """The partition's HW moved (or it went away): wake whoever waits on it."""
        self.produce_purgatory.check_and_complete(partition.key)
        self.fetch_purgatory.check_and_complete(partition.key)

    async def wait_for_flush(self, timeout: float = 30.0) -> None:
        """Let a running fsync round finish (shutdown)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._flushing and loop.time() < deadline:
            await asyncio.sleep(0.001)

    def flush_all(self) -> None:
        """Flush every partition and commit what is there (shutdown)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._dirty.clear()
        self._sync_wanted = False
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        for p in list(self.partitions.values()):
            try:
                p.log.flush()
            except Exception:
                log.exception("flush of %s-%d failed", p.topic, p.index)
                continue
            moved = p.maybe_advance_high_watermark()
            if p.mark_durable(p.log.log_end_offset) or moved:
                self.notify(p)

    def close_all(self) -> None:
        self.closed = True
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for p in list(self.partitions.values()):
            try:
                p.log.close()
            except Exception:
                log.exception("closing the log of %s-%d failed", p.topic, p.index)


def _run_tickets(tickets) -> set:
    """On the fsync thread: run each ticket; returns the partitions whose fsync failed."""
    failed = set()
    for p, t in tickets:
        try:
            t.run()
        except OSError as e:
            log.error("fsync of %s-%d failed: %s; acks=all writes after offset %d wait for the "
                      "next attempt", p.topic, p.index, e, p.durable_offset)
            failed.add(p)
    return failed
