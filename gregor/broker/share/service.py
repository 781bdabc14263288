"""Share groups inside a broker: membership (the group coordinator's part), share sessions
and share-partitions (the partition leader's part), and their durable state in
`__share_group_state` (the share coordinator's part), on the broker's loop.

On one node this broker is all three. The share-partition state is loaded from the topic when
the broker starts and written back on every acknowledgement; an acknowledgement is answered
only once its write is committed (as Kafka's leader waits for WriteShareGroupState), so an
ACCEPT a client saw confirmed survives kill -9. Acquisitions are not written: after a restart
the records that were acquired are delivered again.

Time comes from the broker's clock (gregor.testing's ManualClock when it has one), so a test
advances the clock past a lock instead of waiting for it.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from ...protocol.records.header import iter_headers
from ..coordinator_log import CoordinatorLog
from ..group.service import ClockTimers, LoopTimers, TopicMetadata
from . import state_records as S
from .coordinator import ShareCoordinator
from .membership import ShareMembership
from .partition_state import SharePartition
from .sessions import ShareSessions
from .settings import group_settings, parse_duration_ms

log = logging.getLogger("gregor.broker.share")

# What one look at the log reads at a time: bounded memory per ShareFetch, and small enough
# that finding 500 records' batch headers does not read megabytes past them.
READ_CHUNK_BYTES = 128 << 10
FENCED_STATE_EPOCH = 124


class ShareService:
    def __init__(self, broker):
        self.broker = broker
        cfg = broker.config
        clock = getattr(broker, "clock", None)
        self.timers = LoopTimers() if clock is None else ClockTimers(clock)
        self.now_ms: Callable[[], int] = (lambda: int(time.time() * 1000)) if clock is None \
            else clock.time_ms
        self.metadata = TopicMetadata(broker)
        groups = getattr(broker, "groups", None)
        coord = getattr(groups, "coordinator", None)
        self.membership = ShareMembership(
            self.timers, self.now_ms, self.metadata, self.settings,
            int(cfg.get("group.share.max.size")), self._member_gone,
            store=self._write_group if coord is not None else None,
            partition_of=coord.partition_of if coord is not None else None)
        if coord is not None:
            # the group coordinator loads and unloads the share groups' records with its
            # partitions of __consumer_offsets
            coord.share_groups = self.membership
        self.sessions = ShareSessions(int(cfg.get("group.share.max.share.sessions")))
        self.partitions: dict[tuple, SharePartition] = {}    # (group, topic id, p) -> state
        self._saved: dict[tuple, dict] = {}                  # loaded, not yet used
        self._lock_timers: dict[tuple, tuple] = {}           # key -> (due ms, timer)
        # one node: key -> (snapshot epoch, state epoch, create ms) of its last snapshot
        self._snapshots: dict[tuple, tuple] = {}
        self.store = CoordinatorLog(
            broker, S.TOPIC, int(cfg.get("share.coordinator.state.topic.num.partitions")),
            {"cleanup.policy": "compact"},
            commit_timeout_ms=int(cfg.get("offsets.commit.timeout.ms")))
        self.waiters: set = set()           # delayed ShareFetches, woken by releases
        # cluster mode: the share coordinator of the __share_group_state partitions this
        # broker leads, and the persister that reaches the coordinator of any key
        self.coordinator = ShareCoordinator(self.store, self.now_ms)
        self._persister = None
        self._loading: dict[tuple, asyncio.Future] = {}
        self.load_errors: dict[tuple, int] = {}

    def _write_group(self, group_id: str, records: list, done) -> None:
        """A share group's membership records, to its partition of `__consumer_offsets`
        through the group coordinator's store (the same queue as its other groups)."""
        coord = self.broker.groups.coordinator
        coord.store.write(coord.partition_of(group_id), records, done)

    @property
    def persister(self):
        if self._persister is None and self.broker.cluster is not None:
            from .persister import ClusterPersister
            self._persister = ClusterPersister(self.broker, self.coordinator)
        return self._persister

    def settings(self, group_id: str) -> dict:
        return group_settings(self.broker, group_id)

    def delivery_count_limit(self) -> int:
        return int(self.broker.config.get("group.share.delivery.count.limit"))

    # -- loading -----------------------------------------------------------------------------

    def load_existing(self) -> None:
        if not self.store.exists():
            return
        for part in range(self.store.num_partitions):
            S.load(self._saved, self.store.records(part), f"{S.TOPIC}-{part}")
        self._snapshots.update((k, S.snapshot_of(v)) for k, v in self._saved.items())
        log.info("loaded the state of %d share-partition(s) from %s", len(self._saved), S.TOPIC)

    # -- share-partitions --------------------------------------------------------------------

    def topic_name(self, topic_id: bytes) -> str | None:
        return self.metadata.name(topic_id)

    def share_partition(self, group_id: str, topic_id: bytes, partition, p) -> SharePartition:
        """The state of (group, topic-partition), created at the start the group's
        share.auto.offset.reset gives (or restored from `__share_group_state`)."""
        key = (group_id, topic_id, partition)
        sp = self.partitions.get(key)
        if sp is not None:
            sp.skip_to(p.log.log_start_offset)
            return sp
        limit = self.delivery_count_limit()
        locks = int(self.broker.config.get("group.share.partition.max.record.locks"))
        saved = self._saved.pop(key, None)
        if saved is not None and saved["start_offset"] >= 0:
            sp = SharePartition.restore(saved["start_offset"], saved["end_offset"],
                                        saved["batches"], saved["state_epoch"], limit, locks)
        else:           # new, or initialised / deleted without a start: at its state epoch
            sp = SharePartition(self._initial_offset(group_id, p), limit, locks)
            sp.state_epoch = saved["state_epoch"] if saved is not None else 0
        sp.leader_epoch = p.leader_epoch
        sp.skip_to(p.log.log_start_offset)
        self.partitions[key] = sp
        return sp

    def needs_loading(self, key: tuple, p) -> bool:
        """Cluster mode: the share-partition's state must be read from its share coordinator
        first (it is not here, or it is from an earlier leadership of the partition)."""
        if self.broker.cluster is None:
            return False
        sp = self.partitions.get(key)
        return sp is None or getattr(sp, "leader_epoch", None) != p.leader_epoch

    async def ensure_loaded(self, keys) -> None:
        """Cluster mode: read from the share coordinator the state of each (key, partition)
        this broker leads but does not hold at the partition's current leader epoch, as
        Kafka's share-partition leader reads ReadShareGroupState before serving a
        share-partition. A key whose read fails stays unloaded (its requests are answered
        without records, or with the error for acknowledgements) and is tried again next
        time."""
        jobs = []
        for key, p in keys:
            if not self.needs_loading(key, p):
                continue
            fut = self._loading.get(key)
            if fut is None:
                fut = self._loading[key] = asyncio.ensure_future(self._load(key, p))
                fut.add_done_callback(lambda _f, k=key: self._loading.pop(k, None))
            jobs.append(fut)
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)

    async def _load(self, key: tuple, p) -> None:
        epoch = p.leader_epoch
        self._ensure_store()
        code, state = await self.persister.read(key, epoch)
        if code:
            log.info("share state of %s not read from its coordinator: error %d", key, code)
            self.load_errors[key] = code
            return
        if not p.is_leader or p.leader_epoch != epoch:
            return                         # the leadership moved while reading
        self.load_errors.pop(key, None)
        old = self.partitions.pop(key, None)
        if old is not None:
            log.info("share-partition %s reloaded at leader epoch %d", key, epoch)
        if state is not None:
            self._saved[key] = state
        else:
            self._saved.pop(key, None)
        self.share_partition(key[0], key[1], key[2], p)

    def _initial_offset(self, group_id: str, p) -> int:
        reset = self.settings(group_id)["auto_offset_reset"]
        if reset == "earliest":
            return p.log.log_start_offset
        if reset.startswith("by_duration:"):
            since = self.now_ms() - parse_duration_ms(reset.split(":", 1)[1])
            found = p.log.offset_for_timestamp(since)
            return found[0] if found is not None else p.high_watermark
        return p.high_watermark

    def log_batches(self, p, read_committed: bool, max_bytes: int):
        """batches(offset) for SharePartition.acquire: (base, last, skip) of the log's
        batches below the high watermark (the LSO for read_committed), at most max_bytes of
        them (at least one). skip: a control batch, or (read_committed) a batch of an aborted
        transaction; such batches are archived, never acquired, as Kafka's share-partition
        does with what a read_committed consumer would filter out.

        batches.seen maps each batch read to where its bytes are, so that records_bytes
        answers the acquired batches from the chunks already read instead of reading the log
        a second time."""
        upper = p.last_stable_offset if read_committed else p.high_watermark
        seen: dict = {}

        def batches(offset: int):
            budget = max(1, max_bytes)
            aborted = aborted_by_producer(p.log, offset, upper) if read_committed else {}
            while offset < upper and budget > 0:
                data = p.log.read(max(offset, p.log.log_start_offset),
                                  min(READ_CHUNK_BYTES, budget), max_offset=upper)
                if not data:
                    return
                last_seen = offset
                for pos, h in iter_headers(data):
                    if h.last_offset >= upper:
                        return
                    seen[h.base_offset] = (data, pos, h.size, h.last_offset)
                    budget -= h.size
                    last_seen = h.last_offset + 1
                    skip = h.is_control or (h.is_transactional and _in_aborted(
                        aborted.get(h.producer_id), h.base_offset))
                    yield h.base_offset, h.last_offset, skip
                if last_seen <= offset:
                    return
                offset = last_seen
        batches.seen = seen
        return batches

    def records_bytes(self, p, ranges, seen: dict | None = None):
        """The stored batches holding the acquired ranges (whole batches, as Kafka sends
        them; the client keeps only the acquired offsets). seen: batches already read (see
        log_batches), taken from those chunks without reading again; batches next to each
        other in one chunk are one slice, so a fetch of fresh records is usually one
        memoryview of what acquisition read, and the response frame sends it uncopied."""
        pieces: list = []          # [data, start, end] slices of read chunks
        seen = seen or {}
        seen_to = -1
        hw = p.high_watermark

        def take(data, start: int, end: int) -> None:
            last = pieces[-1] if pieces else None
            if last is not None and last[0] is data and last[2] == start:
                last[2] = end
            else:
                pieces.append([data, start, end])

        for r in ranges:
            offset = max(r.first_offset, seen_to)
            while offset <= r.last_offset and offset in seen:
                data, pos, size, last_offset = seen[offset]
                take(data, pos, pos + size)
                offset = seen_to = last_offset + 1
            while offset <= r.last_offset:
                # bounded by the high watermark, not by last_offset + 1: the log leaves out
                # the batch that holds its max_offset, and a redelivered range often ends
                # inside a batch
                data = p.log.read(offset, READ_CHUNK_BYTES, max_offset=hw)
                if not data:
                    break
                end = offset
                for pos, h in iter_headers(data):
                    if h.base_offset > r.last_offset:
                        break
                    if h.last_offset < offset:
                        continue
                    take(data, pos, pos + h.size)
                    end = h.last_offset + 1
                if end <= offset:
                    break
                offset = seen_to = end
        if len(pieces) == 1:
            data, start, end = pieces[0]
            return memoryview(data)[start:end]
        return b"".join(memoryview(d)[a:b] for d, a, b in pieces)

    # -- locks -------------------------------------------------------------------------------

    def arm_lock_timer(self, key: tuple, sp: SharePartition) -> None:
        due = sp.next_deadline()
        current = self._lock_timers.get(key)
        if due is None or (current is not None and current[0] <= due):
            return
        if current is not None:
            current[1].cancel()
        delay = max(0, due - self.now_ms())
        self._lock_timers[key] = (due, self.timers.call_later(
            delay, lambda: self._locks_due(key)))

    def _locks_due(self, key: tuple) -> None:
        self._lock_timers.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            return
        if sp.expire_locks(self.now_ms()):
            self.persist(key, sp)
            self.wake(key)
        self.arm_lock_timer(key, sp)

    # -- members leaving ---------------------------------------------------------------------

    def _member_gone(self, group_id: str, member_id: str) -> None:
        """A member left or was fenced: its records come back. Its share session stays until
        it closes it (epoch -1) or its connection: a leaving client may send its final
        ShareAcknowledge after its leave heartbeat."""
        self.release(group_id, member_id)

    def release(self, group_id: str, member_id: str, only=None) -> None:
        for key, sp in list(self.partitions.items()):
            if key[0] != group_id or (only is not None and key[1:] not in only):
                continue
            if sp.release_member(member_id):
                self.persist(key, sp)
                self.wake(key)

    def connection_lost(self, connection) -> None:
        for s in self.sessions.drop_connection(connection):
            self.release(s.group_id, s.member_id, s.partitions)

    def wake(self, key: tuple) -> None:
        topic = self.topic_name(key[1])
        if topic is not None:
            self.broker.replica_manager.fetch_purgatory.check_and_complete((topic, key[2]))

    # -- persisting --------------------------------------------------------------------------

    def _ensure_store(self) -> None:
        """The topic exists before a write: created here on one node, through ZooKeeper in a
        cluster (replicated like __consumer_offsets; a write then succeeds only on the broker
        leading the key's partition, see docs/share-groups.md)."""
        if self.broker.cluster is not None:
            self.broker.cluster.ensure_internal_topic(
                S.TOPIC, self.store.num_partitions, self.store.configs,
                int(self.broker.config.get("share.coordinator.state.topic.replication.factor")))
        elif not self.store.exists():
            self.store.ensure()

    def persist(self, key: tuple, sp: SharePartition, done: Callable[[int], None] | None = None):
        """Write the share-partition's state; done(error code) once committed. In a cluster
        through its share coordinator (WriteShareGroupState when that is another broker)."""
        group_id, topic_id, partition = key
        if self.broker.cluster is not None:
            state = {"state_epoch": sp.state_epoch, "start_offset": sp.start_offset,
                     "end_offset": sp.end_offset, "batches": sp.runs()}
            try:
                self._ensure_store()
            except Exception as e:
                if done is not None:
                    done(getattr(e, "code", -1))
                return
            self.persister.write(key, state, getattr(sp, "leader_epoch", -1),
                                 lambda code: self._written(key, sp, code, done))
            return
        now = self.now_ms()
        epoch, created = S.next_snapshot(self._snapshots.get(key), sp.state_epoch, now)
        self._snapshots[key] = (epoch, sp.state_epoch, created)
        record = (S.encode_key(group_id, topic_id, partition), S.encode_snapshot(
            sp.state_epoch, sp.start_offset, sp.runs(), getattr(sp, "leader_epoch", -1),
            snapshot_epoch=epoch, create_ms=created, write_ms=now))
        target = S.partition_for(group_id, topic_id, partition, self.store.num_partitions)
        try:
            self._ensure_store()
            # in the log before done, not fsynced: a power loss redelivers (Durability, docs)
            self.store.append_then(target, [record],
                                   lambda code, _last: done(code) if done else None,
                                   durable=False)
        except Exception as e:                      # a KafkaError, or the topic is not here
            code = getattr(e, "code", -1)
            log.warning("writing share state of %s to %s failed: %s", key, S.TOPIC, e)
            if done is not None:
                done(code)

    def _written(self, key: tuple, sp: SharePartition, code: int, done) -> None:
        """Cluster mode: a state epoch fenced at the coordinator means the state was reset or
        deleted (AlterShareGroupOffsets, DeleteShareGroupOffsets): this copy is dropped and
        read again on the next request naming it."""
        if code == FENCED_STATE_EPOCH and self.partitions.get(key) is sp:
            del self.partitions[key]
        if done is not None:
            done(code)

    def delete_state(self, key: tuple, done: Callable[[int], None] | None = None) -> None:
        self.partitions.pop(key, None)
        self._saved.pop(key, None)
        self._snapshots.pop(key, None)
        group_id, topic_id, partition = key
        target = S.partition_for(group_id, topic_id, partition, self.store.num_partitions)
        try:
            self._ensure_store()
            self.store.append_then(target, [(S.encode_key(*key), None)],
                                   lambda code, _last: done(code) if done else None)
        except Exception as e:
            if done is not None:
                done(getattr(e, "code", -1))

    # -- describing --------------------------------------------------------------------------

    def known_partitions(self, group_id: str) -> list[tuple]:
        keys = {k for k in self.partitions if k[0] == group_id}
        keys |= {k for k in self._saved if k[0] == group_id}
        return sorted(keys)

    def start_offset(self, key: tuple) -> int | None:
        sp = self.partitions.get(key)
        if sp is not None:
            return sp.start_offset
        saved = self._saved.get(key)
        return saved["start_offset"] if saved else None

    def groups(self) -> set[str]:
        return set(self.membership.groups) | {k[0] for k in self.partitions} | \
            {k[0] for k in self._saved}

    def close(self) -> None:
        self.membership.close()
        if self._persister is not None:
            self._persister.close()
        for _due, t in self._lock_timers.values():
            t.cancel()
        self._lock_timers.clear()


def aborted_by_producer(log_, start: int, upper: int) -> dict[int, list[tuple[int, int]]]:
    """{producer id: [(first offset, marker offset)]} of the aborted transactions that
    overlap [start, upper), from the partition's aborted-transaction index (as a
    read_committed Fetch is answered)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for e in log_.txn_index.overlapping(start, upper):
        out.setdefault(e.producer_id, []).append((e.first_offset, e.last_offset))
    return out


def _in_aborted(spans, offset: int) -> bool:
    """A producer's batch at offset belongs to one of its aborted transactions: it lies
    between the transaction's first offset and its ABORT marker."""
    return bool(spans) and any(first <= offset < marker for first, marker in spans)
