"""The transaction coordinator inside a broker: its log (`__transaction_state`), its markers,
its timers.

On a single node this broker leads every partition of `__transaction_state`, so it loads them
all at start (or creates the topic the first time a transactional producer shows up, as Kafka
creates it on the first FindCoordinator for a transactional id). With replication the same
`load_partition` / `unload_partition` calls follow leadership of those partitions.
"""
from __future__ import annotations

import asyncio
import logging

from ...protocol.errors import ErrorCode, KafkaError
from ..coordinator_log import CoordinatorLog, wait_committed
from .coordinator import TOPIC, TransactionCoordinator, TxnConfig

log = logging.getLogger("gregor.broker.txn")

OFFSETS_TOPIC = "__consumer_offsets"


class _LogPort:
    def __init__(self, store: CoordinatorLog, clustered: bool):
        self.store = store
        self.clustered = clustered

    async def append(self, partition, key, value, coordinator_epoch):
        # in a cluster the coordinator epoch is the leader epoch the partition was loaded at:
        # a write from state loaded under an older leadership is refused
        await self.store.append(partition, [(key, value)],
                                leader_epoch=coordinator_epoch if self.clustered else None)


class LocalMarkers:
    """Writes COMMIT/ABORT markers to partitions this broker leads, and waits until they are
    committed. (Partitions led by other brokers of a cluster take WriteTxnMarkers instead:
    cluster/markers.py.)"""

    def __init__(self, broker, commit_timeout_ms: int):
        self.broker = broker
        self.commit_timeout_ms = commit_timeout_ms

    async def write(self, producer_id, producer_epoch, commit, coordinator_epoch, partitions):
        rm = self.broker.replica_manager
        results: dict = {}
        waits = []
        member = self.broker.cluster
        for tp in partitions:
            p = rm.get(*tp)
            if member is not None and (p is None or not p.is_leader):
                # a follower (or a broker without the partition) never writes markers
                results[tp] = member.partition_error(*tp)
                continue
            if p is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            try:
                offset = p.append_control_marker(producer_id, producer_epoch, commit,
                                                 coordinator_epoch)
            except KafkaError as e:
                results[tp] = e.code
                continue
            waits.append((tp, p, offset))
        for tp, p, offset in waits:
            try:
                await wait_committed(self.broker, p, offset + 1, self.commit_timeout_ms)
            except KafkaError as e:
                results[tp] = e.code
                continue
            results[tp] = ErrorCode.NONE
            if tp[0] == OFFSETS_TOPIC:
                groups = getattr(self.broker, "group_coordinator", None)
                if groups is not None:
                    groups.on_txn_marker(tp[1], producer_id, commit)
        return results


class TxnService:
    def __init__(self, broker):
        self.broker = broker
        cfg = broker.config
        self.config = TxnConfig(
            num_partitions=int(cfg.get("transaction.state.log.num.partitions")),
            max_timeout_ms=int(cfg.get("transaction.max.timeout.ms")),
            id_expiration_ms=int(cfg.get("transactional.id.expiration.ms")))
        commit_timeout = int(cfg.get("request.timeout.ms"))
        self.store = CoordinatorLog(
            broker, TOPIC, self.config.num_partitions,
            {"cleanup.policy": "compact", "segment.bytes":
             str(cfg.get("transaction.state.log.segment.bytes")),
             # Kafka keeps transaction.state.log.min.isr (2) even on a smaller cluster, where
             # every transaction then fails; capped at the replicas the topic really has.
             "min.insync.replicas": str(min(int(cfg.get("transaction.state.log.min.isr")),
                                            self._replication_factor()))},
            commit_timeout_ms=commit_timeout)
        markers = LocalMarkers(broker, commit_timeout)
        if broker.cluster is not None:
            from ..cluster.markers import ClusterMarkers
            markers = ClusterMarkers(broker, markers)
        clock = getattr(broker, "clock", None)     # gregor.testing's ManualClock, or None
        self.sleep = asyncio.sleep if clock is None else clock.sleep
        self.coordinator = TransactionCoordinator(
            self.config, _LogPort(self.store, broker.cluster is not None), markers,
            broker.producer_ids.next_id,
            **({} if clock is None else {"clock": clock.time_ms}))
        self._tasks: list[asyncio.Task] = []

    def _replication_factor(self) -> int:
        return 1      # one broker; replication sets this from the live brokers

    def load_existing(self) -> None:
        """Load every partition of the topic if it exists (broker start). In a cluster the
        partitions this broker leads are loaded as it becomes their leader."""
        if self.broker.cluster is None and self.store.exists():
            self._load_all()

    def ensure(self) -> None:
        """Create the topic on first use and load it (in a cluster: through ZooKeeper)."""
        member = self.broker.cluster
        if member is not None:
            rf = min(int(self.broker.config.get("transaction.state.log.replication.factor")),
                     max(1, len(member.snapshot.brokers)))
            configs = dict(self.store.configs)
            configs["min.insync.replicas"] = str(
                min(int(self.broker.config.get("transaction.state.log.min.isr")), rf))
            member.ensure_internal_topic(TOPIC, self.config.num_partitions, configs, rf)
            return
        if not self.store.exists():
            self.store.ensure()
            self._load_all()

    def became_leader(self, partition: int, leader_epoch: int) -> None:
        """Cluster mode: this broker now leads the partition; the leader epoch is the
        coordinator epoch its markers carry (Kafka's)."""
        self.coordinator.unload_partition(partition)
        self.store.own(partition, leader_epoch)
        self.coordinator.load_partition(partition, leader_epoch, self.store.records(partition))
        log.info("coordinating the transactions of %s-%d (epoch %d)", TOPIC, partition,
                 leader_epoch)

    def stopped_leading(self, partition: int) -> None:
        """Every path that makes the partition a follower or takes it away calls this: the
        coordinator forgets its state (a new leader loads it from the log) and its writes to
        the partition are refused from now on."""
        self.store.disown(partition)
        if partition in self.coordinator.partitions:
            self.coordinator.unload_partition(partition)
            log.info("no longer coordinating the transactions of %s-%d", TOPIC, partition)

    def _load_all(self) -> None:
        for n in range(self.config.num_partitions):
            if n not in self.coordinator.partitions:
                self.coordinator.load_partition(n, 0, self.store.records(n))

    def start_timers(self) -> None:
        cfg = self.broker.config
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._every(
            int(cfg.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")),
            self.coordinator.abort_timed_out)))
        self._tasks.append(loop.create_task(self._every(
            int(cfg.get("transaction.remove.expired.transaction.cleanup.interval.ms")),
            self.coordinator.expire_transactional_ids)))

    async def _every(self, interval_ms: int, job) -> None:
        while True:
            await self.sleep(max(0.01, interval_ms / 1000.0))
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator housekeeping failed")

    def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        self.coordinator.close()
