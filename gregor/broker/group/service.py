"""The group coordinator inside a broker: its store (`__consumer_offsets`), timers, metrics
and housekeeping.

On a single node this broker leads every partition of `__consumer_offsets`, so it loads them
all when it starts (or creates the topic the first time a group shows up, as Kafka does on the
first FindCoordinator for a group). With replication the same load_partition /
unload_partition calls follow leadership of those partitions.

Bounding the topic: every commit is a record, so `__consumer_offsets` grows with commits.
It is created with cleanup.policy=compact (Kafka's setting): the log cleaner keeps the last
record per key (group, topic, partition) and drops tombstones after delete.retention.ms.
"""
from __future__ import annotations

import asyncio
import logging
import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ...protocol.errors import ErrorCode, KafkaError
from ..coordinator_log import CoordinatorLog
from .coordinator import TOPIC, GroupConfig, GroupCoordinator

log = logging.getLogger("gregor.broker.group")


class _Timer:
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def cancel(self) -> None:
        self.handle.cancel()


class LoopTimers:
    def call_later(self, delay_ms: int, fn) -> _Timer:
        return _Timer(asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000.0, fn))


class ClockTimers:
    """Timers of a test clock (gregor.testing.ManualClock): they fire when it is advanced."""

    def __init__(self, clock):
        self.clock = clock

    def call_later(self, delay_ms: int, fn):
        if delay_ms <= 0:            # due now: no advance() should be needed to run it
            return _Timer(asyncio.get_running_loop().call_soon(fn))
        return self.clock.call_later(delay_ms / 1000.0, fn)


class LogStore:
    """store.write for the coordinator, on `__consumer_offsets` through CoordinatorLog.

    Writes are queued and appended once the requests read in this loop iteration are handled
    (call_soon), per partition in the order they were made. Consecutive plain writes to one
    partition go out as one batch, up to MERGE_MAX_BYTES: one encode, one append and one wait
    for the commit (the group-commit fsync) for a whole burst of pipelined OffsetCommits, as
    Kafka's coordinator runtime batches the records of several write operations. Each write
    still gets its own last offset and its own answer. A transactional write (TxnOffsetCommit)
    is a batch of its own producer, so it closes the run. A failed append or commit fails
    every write of its batch.
    """

    def __init__(self, log_: CoordinatorLog):
        self.log = log_
        self._queued: dict[int, list] = {}          # partition -> [(records, done, producer)]
        self._scheduled = False

    def write(self, partition, records, done, producer=None) -> None:
        # the leadership the write was made under: it is refused if that has changed by the
        # time the queue is flushed
        epoch = self.log.ownership(partition)
        self._queued.setdefault(partition, []).append((records, done, producer, epoch))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        queued, self._queued = self._queued, {}
        for partition, writes in queued.items():
            epoch = self.log.ownership(partition)
            stale = [w for w in writes if w[3] != epoch]
            if stale:
                log.warning("%d write(s) to %s-%d refused: made under a leadership this "
                            "broker no longer holds", len(stale), TOPIC, partition)
                _answer(stale, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
            for run in _runs([w for w in writes if w[3] == epoch]):
                self._append(partition, run, epoch)

    def _append(self, partition: int, run: list, ownership: tuple | None) -> None:
        producer = run[0][2]
        epoch = ownership[0] if ownership is not None else None
        records = run[0][0] if len(run) == 1 else [r for w in run for r in w[0]]
        try:
            if producer is None:
                self.log.append_then(partition, records,
                                     lambda code, last: _answer(run, code, last),
                                     leader_epoch=epoch)
            else:
                self.log.append_then(partition, records,
                                     lambda code, last: _answer(run, code, last),
                                     producer_id=producer[0], producer_epoch=producer[1],
                                     transactional=True, origin="coordinator",
                                     leader_epoch=epoch)
        except KafkaError as e:
            log.warning("writing %d record(s) to %s-%d failed: %s", len(records), TOPIC,
                        partition, e)
            _answer(run, e.code, -1)
        except Exception:
            log.exception("writing to %s-%d failed", TOPIC, partition)
            _answer(run, ErrorCode.UNKNOWN_SERVER_ERROR, -1)


# What one merged batch of coordinator writes holds at most (key and value bytes): far below
# max.message.bytes (1 MiB by default), so merging never makes a batch the log refuses; a
# single larger write still goes alone and gets its own answer.
MERGE_MAX_BYTES = 256 * 1024


def _runs(writes: list) -> list[list]:
    """Split a partition's queued writes into batches: consecutive plain writes together up to
    MERGE_MAX_BYTES; each transactional write alone."""
    runs: list[list] = []
    current: list = []
    size = 0
    for w in writes:
        if w[2] is not None:
            if current:
                runs.append(current)
                current, size = [], 0
            runs.append([w])
            continue
        n = sum(len(k) + (len(v) if v is not None else 0) for k, v in w[0])
        if current and size + n > MERGE_MAX_BYTES:
            runs.append(current)
            current, size = [], 0
        current.append(w)
        size += n
    if current:
        runs.append(current)
    return runs


def _answer(run: list, code: int, last_offset: int) -> None:
    """done(code, last offset of its own records) for each write of a batch."""
    if code:
        ends = [-1] * len(run)
    else:
        ends = []
        end = last_offset
        for records, *_ in reversed(run):
            ends.append(end)
            end -= len(records)
        ends.reverse()
    for (_records, done, *_), last in zip(run, ends):
        try:
            done(code, last)
        except Exception:
            log.exception("a %s write callback failed", TOPIC)


class TopicMetadata:
    """The coordinator's view of the broker's topics (KIP-848 groups assign by topic id)."""

    def __init__(self, broker):
        self.broker = broker

    def topic(self, name: str):
        t = self.broker.store.get(name)
        if t is None or t.deleting:
            return None
        return t.topic_id_bytes, t.partitions

    def names(self) -> list[str]:
        return [t.name for t in self.broker.store.live()]

    def name(self, topic_id: bytes):
        hex_id = bytes(topic_id).hex()
        for t in self.broker.store.live():
            if t.topic_id == hex_id:
                return t.name
        return None


def _names(value) -> tuple:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(v.strip() for v in value or () if v.strip())


class GroupMetrics:
    """Counters the coordinator bumps, and a collector for groups by state."""

    def __init__(self):
        self.counts = {"rebalances": 0, "offset_commits": 0, "expirations": 0,
                       "consumer_rebalances": 0}
        self.coordinator: GroupCoordinator | None = None

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def collect(self):
        g = GaugeMetricFamily("gregor_groups", "Classic consumer groups by state",
                              labels=["state"])
        if self.coordinator is not None:
            for state, n in self.coordinator.groups_by_state().items():
                g.add_metric([state], n)
        yield g
        c = GaugeMetricFamily("gregor_consumer_groups",
                              "Consumer-protocol (KIP-848) groups by state", labels=["state"])
        if self.coordinator is not None:
            for state, n in self.coordinator.consumer_groups_by_state().items():
                c.add_metric([state], n)
        yield c
        for name, what, help_ in (
                ("gregor_group_rebalances", "rebalances", "Rebalances started"),
                ("gregor_consumer_group_rebalances", "consumer_rebalances",
                 "Group epoch bumps of consumer-protocol (KIP-848) groups"),
                ("gregor_group_offset_commits", "offset_commits", "Offset commits stored"),
                ("gregor_group_member_expirations", "expirations",
                 "Members removed after their session timed out")):
            c = CounterMetricFamily(name, help_)
            c.add_metric([], self.counts.get(what, 0))
            yield c


class GroupService:
    def __init__(self, broker):
        self.broker = broker
        cfg = broker.config
        self.config = GroupConfig(
            num_partitions=int(cfg.get("offsets.topic.num.partitions")),
            min_session_timeout_ms=int(cfg.get("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(cfg.get("group.max.session.timeout.ms")),
            initial_rebalance_delay_ms=int(cfg.get("group.initial.rebalance.delay.ms")),
            max_size=int(cfg.get("group.max.size")),
            metadata_max_bytes=int(cfg.get("offset.metadata.max.bytes")),
            retention_ms=int(cfg.get("offsets.retention.minutes")) * 60000,
            consumer_heartbeat_interval_ms=int(cfg.get("group.consumer.heartbeat.interval.ms")),
            consumer_session_timeout_ms=int(cfg.get("group.consumer.session.timeout.ms")),
            consumer_max_size=int(cfg.get("group.consumer.max.size")),
            consumer_assignors=_names(cfg.get("group.consumer.assignors")))
        self.store = CoordinatorLog(
            broker, TOPIC, self.config.num_partitions,
            {"cleanup.policy": "compact",
             "segment.bytes": str(cfg.get("offsets.topic.segment.bytes"))},
            commit_timeout_ms=int(cfg.get("offsets.commit.timeout.ms")))
        self.metrics = GroupMetrics()
        clock = getattr(broker, "clock", None)     # gregor.testing's ManualClock, or None
        self.sleep = asyncio.sleep if clock is None else clock.sleep
        self.coordinator = GroupCoordinator(
            self.config, LogStore(self.store),
            LoopTimers() if clock is None else ClockTimers(clock),
            _now_ms if clock is None else clock.time_ms, self.metrics,
            metadata=TopicMetadata(broker))
        self.metrics.coordinator = self.coordinator
        try:
            broker.metrics.registry.register(self.metrics)
        except Exception:           # a second service in one process (tests): keep going
            log.debug("group metrics already registered")
        self._tasks: list[asyncio.Task] = []

    def load_existing(self) -> None:
        """Load every partition of the topic if it exists (broker start, on the loop). In a
        cluster the partitions this broker leads are loaded as it becomes their leader."""
        if self.broker.cluster is None and self.store.exists():
            self._load_all()

    def ensure(self) -> None:
        if self.broker.cluster is not None:
            # replicated like any topic: created through ZooKeeper, loaded on leadership
            self.broker.cluster.ensure_internal_topic(
                TOPIC, self.config.num_partitions, self.store.configs,
                int(self.broker.config.get("offsets.topic.replication.factor")))
            return
        if not self.store.exists():
            self.store.ensure()
        if len(self.coordinator.partitions) < self.config.num_partitions:
            self._load_all()

    def became_leader(self, partition: int, leader_epoch: int) -> None:
        """Cluster mode: this broker now leads the partition: its groups are ours."""
        self.coordinator.unload_partition(partition)
        self.store.own(partition, leader_epoch)
        self.coordinator.load_partition(partition, self.store.batches(partition))
        log.info("coordinating the groups of %s-%d (epoch %d)", TOPIC, partition,
                 leader_epoch)

    def stopped_leading(self, partition: int) -> None:
        """Every path that makes the partition a follower or takes it away calls this: its
        groups are unloaded (members told NOT_COORDINATOR) and writes queued or made from
        now on are refused."""
        self.store.disown(partition)
        if partition in self.coordinator.partitions:
            self.coordinator.unload_partition(partition)
            log.info("no longer coordinating the groups of %s-%d", TOPIC, partition)

    def _load_all(self) -> None:
        for n in range(self.config.num_partitions):
            if n not in self.coordinator.partitions:
                self.coordinator.load_partition(n, self.store.batches(n))
        log.info("loaded %d consumer group(s) from %s", len(self.coordinator.groups), TOPIC)

    def start_timers(self) -> None:
        interval = int(self.broker.config.get("offsets.retention.check.interval.ms"))
        self._tasks.append(asyncio.get_running_loop().create_task(self._expire_every(interval)))

    async def _expire_every(self, interval_ms: int) -> None:
        while True:
            await self.sleep(max(0.01, interval_ms / 1000.0))
            try:
                self.coordinator.expire_offsets()
            except Exception:
                log.exception("expiring committed offsets failed")

    def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        self.coordinator.close()


def _now_ms() -> int:
    return int(time.time() * 1000)
