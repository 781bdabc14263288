"""One partition on this broker: its log, high watermark, leader epoch and ISR.

A single-node broker (and a partition with one replica) is always the leader and the ISR is
[this broker]: the high watermark moves to the log end right after each append, so an
acknowledged record is visible to consumers at once.

In a cluster the leader also tracks each follower (`FollowerState`, follower_state.py). The high
watermark is the smallest log end among the in-sync replicas, counting a replica whose addition
to the ISR is still being written to ZooKeeper (Kafka's "maximal ISR": a record counted as
committed is on every replica that could be elected). Followers take the high watermark from the
leader's fetch responses.
`durable_offset` is the end of what is fsynced locally; with gregor.fsync.acks.all, acks=all
producers wait for it too while the ISR is this broker alone (see ReplicaManager's group
commit); with followers in the ISR, their copies are the promise, as on Kafka.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Any

from ..protocol.errors import ErrorCode, NotEnoughReplicasError, NotLeaderOrFollowerError
from .follower_state import FollowerState

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
        self.is_leader = True           # cluster mode: whether the controller named us the leader
        self.leader_id = broker_id
        self.state_zk_version = -1      # cluster mode: the state znode's version we acted on
        self.followers: dict[int, FollowerState] = {}    # leader side, cluster mode
        self.pending_isr: list[int] | None = None         # an ISR write under way
        self.zk_state = None            # cluster mode: the partition state last acted on
        self.isr_refused_at = None      # cluster mode: the state an ISR change was refused at
        self._leading_epoch: int | None = None            # the epoch make_leader set up
        # Everything the log recovered at start-up was on disk: committed and durable.
        self.high_watermark = log_.log_end_offset
        self.durable_offset = log_.log_end_offset
        # Bytes that became readable (below the HW) since start; DelayedFetch compares
        # snapshots of this counter to know whether min_bytes is reached without reading.
        self.committed_bytes = 0
        self._uncommitted: deque[tuple[int, int]] = deque()   # (end offset, bytes)
        self.wait_for_durable = False   # set by the ReplicaManager (gregor.fsync.acks.all)
        # cluster mode, on a follower: the leader's HW as its last fetch response gave it
        # (not capped by our log end, unlike high_watermark); None until then
        self.leader_high_watermark: int | None = None

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
                                 origin: str = "client", durable: bool = True):
        """Append validated v2 batches; returns the log's AppendInfo. Raises
        NotEnoughReplicasError (nothing appended) when acks=all cannot be satisfied, and the
        log's own errors (sequence checks, storage errors), and NotLeaderOrFollowerError
        (nothing appended) on a follower: only the fetcher appends to a follower's log.
        durable=False: an acks=all write whose writer does not wait for the fsync (share-group
        state), so it starts no fsync round of its own; the deferred round covers it."""
        self._check_leader()
        in_sync = len(self.isr)
        if required_acks == -1 and in_sync < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index} has {in_sync} in-sync replica(s), below its "
                f"min.insync.replicas={self.min_insync_replicas}; lower min.insync.replicas or "
                "produce with acks=1")
        info = self.log.append(
            data, timestamp_type="LogAppendTime" if self.log_append_time else "CreateTime",
            now_ms=now_ms, check_sequence=origin == "client", leader_epoch=self.leader_epoch)
        if not info.duplicate:
            self._uncommitted.append((info.last_offset + 1, len(data)))
            if self.manager is not None:
                self.manager.appended(self, sync=required_acks == -1 and durable and
                                      self.fsync_counts())
            else:
                self.maybe_advance_high_watermark()
        return info

    def _check_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"{self.topic}-{self.index}: this broker is not its leader (leader epoch "
                f"{self.leader_epoch}); only the leader takes writes")

    def append_control_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                              coordinator_epoch: int) -> int:
        """Write a transaction's COMMIT/ABORT marker (the transaction coordinator's write, not
        a client's); returns its offset. A marker older than the producer's epoch is refused
        (InvalidProducerEpochError) by the log's producer rules."""
        from ..protocol.records.batch import encode_control_batch
        self._check_leader()
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
        """Move the HW towards `upto` (default: the log end), never past what every member
        of the (maximal) ISR has. True if it moved."""
        leo = self.log.log_end_offset if upto is None else min(upto, self.log.log_end_offset)
        if self.followers:
            if not self.is_leader:
                return False                  # a follower's HW comes from its leader
            for r in self.maximal_isr():
                f = self.followers.get(r)
                if f is not None and f.log_end_offset < leo:
                    leo = f.log_end_offset
        return self._set_high_watermark(leo)

    def _set_high_watermark(self, hw: int) -> bool:
        if hw <= self.high_watermark:
            return False
        self.high_watermark = hw
        unc = self._uncommitted
        while unc and unc[0][0] <= hw:
            self.committed_bytes += unc.popleft()[1]
        return True

    # -- replication (cluster mode) --------------------------------------------------------

    def maximal_isr(self) -> list[int]:
        """The ISR plus replicas being added to it: whom the HW must wait for."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    def make_leader(self, epoch: int, isr: list[int], replicas: list[int], zk_version: int,
                    now_ms: int) -> bool:
        """The controller names this broker the leader at `epoch`. A new epoch begins at our log
        end; followers' positions are unknown until they fetch, so the HW waits for them.
        True if this starts a new leadership (a new epoch or a former follower)."""
        new_epoch = not self.is_leader or self._leading_epoch != epoch
        self._leading_epoch = epoch
        self.is_leader = True
        self.leader_id = self.broker_id
        self.leader_epoch = epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.state_zk_version = zk_version
        self.leader_high_watermark = None
        if new_epoch:
            self.pending_isr = None
            self.log.leader_epochs.assign(epoch, self.log.log_end_offset)
            self.followers = {r: FollowerState(now_ms) for r in replicas if r != self.broker_id}
        self.maybe_advance_high_watermark()
        return new_epoch

    def make_follower(self, leader: int, epoch: int, isr: list[int], replicas: list[int],
                      zk_version: int) -> bool:
        """The controller names another broker (or none, -1) the leader. True if the leader or
        its epoch changed (the fetcher must then check for divergence again)."""
        changed = self.is_leader or leader != self.leader_id or epoch != self.leader_epoch
        self._leading_epoch = None
        self.is_leader = False
        self.leader_id = leader
        self.leader_epoch = epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.state_zk_version = zk_version
        self.pending_isr = None
        if changed:
            self.leader_high_watermark = None       # a new leader's HW is not known yet
        # The leader's bookkeeping is dropped; the one marker entry keeps
        # maybe_advance_high_watermark from moving our HW to our own log end.
        self.followers = {-1: FollowerState(0)}
        return changed

    def append_as_follower(self, data) -> None:
        """Batches replicated from the leader, offsets and leader epochs as the leader wrote
        them (the log refuses batches that do not continue it). Producer state and the
        aborted-transaction index are rebuilt from them, so a follower that becomes leader
        still recognises an idempotent producer's retry."""
        info = self.log.append(data, assign_offsets=False)
        self._uncommitted.append((info.last_offset + 1, len(data)))
        if self.manager is not None:
            self.manager.appended(self, sync=False)

    def fsync_counts(self) -> bool:
        """Whether acks=all waits for the leader's fsync (gregor.fsync.acks.all): when the
        record has no other copy, i.e. the ISR is this broker alone. With followers in the
        ISR the copies on them are what an acknowledgement promises, as on Kafka, and an
        fsync per round would only add its latency (docs/cluster.md)."""
        return len(self.isr) <= 1

    def update_follower(self, replica: int, fetch_offset: int, now_ms: int) -> bool:
        """A follower fetched from fetch_offset (its log end). True if the HW moved."""
        f = self.followers.get(replica)
        if f is None or not self.is_leader:
            return False
        f.update(fetch_offset, self.log.log_end_offset, now_ms)
        return self.maybe_advance_high_watermark()

    def follower_high_watermark(self, leader_hw: int) -> bool:
        """On a follower: the leader's HW, capped by what we have. True if it moved."""
        self.leader_high_watermark = leader_hw
        return self._set_high_watermark(min(leader_hw, self.log.log_end_offset))

    def log_end_offset_lag(self) -> int:
        """How far this replica's log end is behind the partition's high watermark
        (DescribeLogDirs' offset_lag): 0 on the leader; on a follower, the leader's HW from
        its last fetch response minus our log end, 0 until one arrived. Kafka computes
        max(HW - LEO, 0) from a follower HW it caps at the follower's log end, which is
        nearly always 0; the leader's own HW gives the lag the field describes."""
        if self.is_leader or self.leader_high_watermark is None:
            return max(self.high_watermark - self.log.log_end_offset, 0)
        return max(self.leader_high_watermark - self.log.log_end_offset, 0)

    def isr_change(self, now_ms: int, lag_ms: int, expand: bool = True) -> list[int] | None:
        """The ISR this leader should ask for, or None: followers not caught up for lag_ms
        leave it; with expand (after a follower's fetch, as Kafka checks it: a follower's
        state is only news when it fetches) followers out of it rejoin once they hold
        everything up to the HW and have reached this epoch's start (isFollowerInSync)."""
        if not self.is_leader or self.pending_isr is not None or not self.followers:
            return None
        keep = [r for r in self.isr if r == self.broker_id or
                (r in self.followers and now_ms - self.followers[r].last_caught_up_ms <= lag_ms)]
        epoch_start = self.log.leader_epochs.start_offset_of_latest()
        for r, f in self.followers.items() if expand else ():
            if (r not in self.isr and r in self.replicas and f.log_end_offset >= self.high_watermark
                    and f.log_end_offset >= epoch_start):
                keep.append(r)
        return None if sorted(keep) == sorted(self.isr) else keep

    def mark_durable(self, offset: int) -> bool:
        """Everything below offset is fsynced. True if that moved the durable offset."""
        offset = min(offset, self.log.log_end_offset)
        if offset <= self.durable_offset:
            return False
        self.durable_offset = offset
        return True

    def check_enough_replicas_reach_offset(self, required_offset: int,
                                           durable: bool = True) -> tuple[bool, int]:
        """(done, error_code) for an acks=all produce waiting for required_offset; with
        durable=False the local fsync is not waited for (the ISR's copies still are)."""
        if self.deleted:
            return True, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not self.is_leader:
            # No longer the leader: the offset may now hold another leader's record (our
            # tail truncated away), so reaching it proves nothing; the producer retries.
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if durable and self.wait_for_durable and self.fsync_counts() and \
                self.durable_offset < required_offset:
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
