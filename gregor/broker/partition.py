"""One partition on this broker: its log, high watermark, leader epoch and ISR.

gregor runs one replica per partition, so this broker is always the leader and the ISR is
[this broker]; the high watermark moves to the log end right after each append, as it does on a
single-replica Kafka partition, so an acknowledged record is visible to consumers at once.
`durable_offset` is the end of what is fsynced; with gregor.fsync.acks.all, acks=all
producers wait for it too (see ReplicaManager's group commit).
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Any

from ..protocol.errors import ErrorCode, NotEnoughReplicasError

log = logging.getLogger("gregor.broker.partition")

# The Log understands these topic settings; the others are kept for DescribeConfigs.
LOG_SETTINGS = ("segment.bytes", "segment.ms", "retention.bytes", "retention.ms",
                "flush.messages", "flush.ms", "index.interval.bytes", "segment.index.bytes",
                "max.message.bytes",
                "message.timestamp.type", "cleanup.policy", "delete.retention.ms",
                "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "max.compaction.lag.ms")


def log_config_for(topic_config: dict[str, Any]):
    from ..log import LogConfig
    return LogConfig.from_dict({k: topic_config[k] for k in LOG_SETTINGS if k in topic_config})


class Partition:
    def __init__(self, topic: str, index: int, log_, config: dict[str, Any], broker_id: int,
                 manager=None):
        self.topic = topic
        self.index = index
        self.key = (topic, index)
        self.log = log_
        self.config = config
        self.broker_id = broker_id
        self.manager = manager
        self.leader_epoch = 0
        self.isr = [broker_id]
        self.replicas = [broker_id]
        self.deleted = False
        self.is_leader = True           # cluster mode: whether ZooKeeper names us the leader
        # Everything the log recovered at start-up was on disk: committed and durable.
        self.high_watermark = log_.log_end_offset
        self.durable_offset = log_.log_end_offset
        # Bytes that became readable (below the HW) since start; DelayedFetch compares
        # snapshots of this counter to know whether min_bytes is reached without reading.
        self.committed_bytes = 0
        self._uncommitted: deque[tuple[int, int]] = deque()   # (end offset, bytes)
        self.wait_for_durable = False   # set by the ReplicaManager (gregor.fsync.acks.all)

    # -- settings --------------------------------------------------------------------------

    @property
    def min_insync_replicas(self) -> int:
        return int(self.config.get("min.insync.replicas", 1))

    @property
    def max_message_bytes(self) -> int:
        return int(self.config.get("max.message.bytes", 1048588))

    @property
    def log_append_time(self) -> bool:
        return self.config.get("message.timestamp.type") == "LogAppendTime"

    def update_config(self, config: dict[str, Any]) -> None:
        self.config = config

    # -- produce ---------------------------------------------------------------------------

    def append_records_to_leader(self, data: bytes, required_acks: int, now_ms: int,
                                 origin: str = "client"):
        """Append validated v2 batches; returns the log's AppendInfo. Raises
        NotEnoughReplicasError (nothing appended) when acks=all cannot be satisfied, and the
        log's own errors (sequence checks, storage errors)."""
        in_sync = len(self.isr)
        if required_acks == -1 and in_sync < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index} has {in_sync} in-sync replica(s), below its "
                f"min.insync.replicas={self.min_insync_replicas}; lower min.insync.replicas or "
                "produce with acks=1")
        info = self.log.append(
            data, timestamp_type="LogAppendTime" if self.log_append_time else "CreateTime",
            now_ms=now_ms, check_sequence=origin == "client")
        if not info.duplicate:
            self._uncommitted.append((info.last_offset + 1, len(data)))
            if self.manager is not None:
                self.manager.appended(self, sync=required_acks == -1)
            else:
                self.maybe_advance_high_watermark()
        return info

    def append_control_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                              coordinator_epoch: int) -> int:
        """Write a transaction's COMMIT/ABORT marker (the transaction coordinator's write, not
        a client's); returns its offset. A marker older than the producer's epoch is refused
        (InvalidProducerEpochError) by the log's producer rules."""
        from ..protocol.records.batch import encode_control_batch
        data = encode_control_batch(commit, producer_id=producer_id,
                                    producer_epoch=producer_epoch,
                                    coordinator_epoch=coordinator_epoch,
                                    partition_leader_epoch=self.leader_epoch)
        info = self.log.append(bytearray(data), timestamp_type="CreateTime")
        self._uncommitted.append((info.last_offset + 1, len(data)))
        if self.manager is not None:
            self.manager.appended(self)
        else:
            self.maybe_advance_high_watermark()
        return info.last_offset

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first offset of the earliest transaction
        still open, or the high watermark."""
        fuo = self.log.first_unstable_offset()
        hw = self.high_watermark
        return hw if fuo is None or fuo > hw else fuo

    def maybe_advance_high_watermark(self, upto: int | None = None) -> bool:
        """Move the HW to `upto` (default: the log end), whose data is durable. True if it
        moved."""
        leo = self.log.log_end_offset if upto is None else min(upto, self.log.log_end_offset)
        if leo <= self.high_watermark:
            return False
        self.high_watermark = leo
        unc = self._uncommitted
        while unc and unc[0][0] <= leo:
            self.committed_bytes += unc.popleft()[1]
        return True

    def mark_durable(self, offset: int) -> bool:
        """Everything below offset is fsynced. True if that moved the durable offset."""
        offset = min(offset, self.log.log_end_offset)
        if offset <= self.durable_offset:
            return False
        self.durable_offset = offset
        return True

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """(done, error_code) for an acks=all produce waiting for required_offset."""
        if self.deleted:
            return True, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if self.wait_for_durable and self.durable_offset < required_offset:
            return False, ErrorCode.NONE
        if self.high_watermark >= required_offset:
            if len(self.isr) < self.min_insync_replicas:
                return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return True, ErrorCode.NONE
        return False, ErrorCode.NONE

    # -- housekeeping ----------------------------------------------------------------------

    def reset_after_truncation(self) -> None:
        """After DeleteRecords/truncation: clamp the HW into the log's range."""
        self.high_watermark = min(max(self.high_watermark, self.log.log_start_offset),
                                  self.log.log_end_offset)
        self.durable_offset = min(self.durable_offset, self.log.log_end_offset)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, hw={self.high_watermark})"
