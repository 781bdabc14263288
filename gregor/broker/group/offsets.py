"""Committed offsets of groups: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, their
expiry, and loading them (and the groups) back from `__consumer_offsets`.

A commit is visible only once its record is committed in the log (the callback of
`store.write`), so an acknowledged commit survives kill -9. Offsets committed inside a
transaction stay pending, per producer id, until the transaction's marker reaches the group's
partition: a COMMIT makes them the group's offsets (unless a later plain commit of the same
partition is already in the log), an ABORT drops them. While pending, OffsetFetch with
require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions, and clients retry.
A group that a commit creates (a consumer assigning its own partitions, an admin's reset) is
likewise shown by ListGroups and DescribeGroups only once that commit is in the log, so no one
sees the group without its offsets; a failed first commit leaves no group behind.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from ...protocol.errors import ErrorCode
from ...protocol.records.batch import CONTROL_COMMIT
from . import consumer_records as CR
from . import log_records as L
from ..share import group_records as SR
from .consumer_group import ConsumerGroup
from .metadata import Group, GroupState, Member
from .store_errors import COMMIT_STORE_ERRORS

log = logging.getLogger("gregor.broker.group")

E = ErrorCode
S = GroupState

TP = tuple  # (topic, partition)


@dataclass
class Committed:
    offset: int
    leader_epoch: int
    metadata: str
    commit_ms: int
    expire_ms: int = -1          # only from old requests that asked for a retention
    log_offset: int = -1         # where its record is in __consumer_offsets


class OffsetsMixin:
    """Offset handling of GroupCoordinator (needs its groups, store, clock, config)."""

    groups: dict[str, Group]

    # -- OffsetCommit ---------------------------------------------------------------------
    def commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
               offsets: dict[TP, tuple[int, int, str | None]], respond: Callable[[dict], None],
               retention_ms: int = -1, api_version: int | None = None) -> None:
        """offsets: (topic, partition) -> (offset, leader_epoch, metadata); answers
        {(topic, partition): error}."""
        code = self.group_status(group_id)
        if code:
            return respond({tp: code for tp in offsets})
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                # A generation of a group that does not exist (the coordinator moved, or the
                # group was deleted): the member must rejoin.
                return respond({tp: E.ILLEGAL_GENERATION for tp in offsets})
            group = self._new_group(group_id)
            group.unwritten = True
        if isinstance(group, ConsumerGroup):
            code = _validate_consumer_member(group, generation, member_id)
            if not code and api_version is not None and api_version < 9 and \
                    member_id in group.members:
                # Kafka: members of a consumer-protocol group commit with OffsetCommit v9+.
                code = E.UNSUPPORTED_VERSION
            if code:
                return respond({tp: code for tp in offsets})
            return self._write_offsets(group, offsets, respond, retention_ms=retention_ms)
        code = self._validate_commit(group, generation, member_id, instance_id)
        if code:
            return respond({tp: code for tp in offsets})
        if group.has(member_id):
            self._schedule_heartbeat(group, group.members[member_id])
        self._write_offsets(group, offsets, respond, retention_ms=retention_ms)

    def _validate_commit(self, group: Group, generation: int, member_id: str,
                         instance_id: str | None) -> int:
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.static_fenced(member_id, instance_id):
            return E.FENCED_INSTANCE_ID
        if member_id and not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        if generation >= 0 and generation != group.generation:
            return E.ILLEGAL_GENERATION
        if generation < 0 and group.is_(S.EMPTY):
            return E.NONE      # a consumer that assigns its own partitions (no group management)
        if group.is_(S.COMPLETING_REBALANCE):
            # Offsets of the previous generation may be stale: commit after the sync.
            return E.REBALANCE_IN_PROGRESS
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        return E.NONE    # Stable, or PreparingRebalance (commits from revoke callbacks)

    def _write_offsets(self, group: Group, offsets: dict, respond, *, retention_ms: int = -1,
                       producer: tuple[int, int] | None = None) -> None:
        now = self.clock()
        results: dict = {}
        records: list = []
        accepted: dict[TP, Committed] = {}
        for tp, (offset, epoch, metadata) in offsets.items():
            if metadata is not None and len(metadata.encode()) > self.config.metadata_max_bytes:
                results[tp] = E.OFFSET_METADATA_TOO_LARGE
                continue
            c = Committed(offset, epoch, metadata or "", now,
                          now + retention_ms if retention_ms >= 0 else -1)
            accepted[tp] = c
            records.append((L.encode_offset_key(group.group_id, *tp),
                            L.offset_value_bytes(c.offset, c.leader_epoch, c.metadata,
                                                 c.commit_ms, c.expire_ms)))
        if not records:
            return respond(results)
        inflight = group.inflight_commits
        for tp in accepted:
            inflight[tp] = inflight.get(tp, 0) + 1

        def stored(code: int, last_offset: int = -1) -> None:
            for tp in accepted:
                inflight[tp] -= 1
                if inflight[tp] <= 0:
                    del inflight[tp]
            if code:
                mapped = COMMIT_STORE_ERRORS.get(code, E.UNKNOWN_SERVER_ERROR)
                results.update({tp: mapped for tp in accepted})
                self._drop_if_never_written(group)
            else:
                if getattr(group, "unwritten", False):
                    group.unwritten = False        # its first record is in the log: shown
                first = last_offset - len(records) + 1
                target = group.offsets if producer is None else \
                    group.pending_txn.setdefault(producer[0], {})
                for i, (tp, c) in enumerate(accepted.items()):
                    c.log_offset = first + i
                    target[tp] = c
                    results[tp] = E.NONE
                self._count("offset_commits")
            respond(results)
        self.store.write(self.partition_of(group.group_id), records, stored, producer=producer)

    def _drop_if_never_written(self, group: Group) -> None:
        """A group that only a failed commit created goes away again, as a failed write
        leaves nothing behind in Kafka's coordinator."""
        if (getattr(group, "pending_creation", False) and not group.offsets
                and not group.pending_txn and not group.inflight_commits
                and self.groups.get(group.group_id) is group):
            group.transition(S.DEAD, self.clock())
            del self.groups[group.group_id]

    # -- TxnOffsetCommit ------------------------------------------------------------------
    def txn_commit(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                   member_id: str, instance_id: str | None,
                   offsets: dict[TP, tuple[int, int, str | None]],
                   respond: Callable[[dict], None]) -> None:
        code = self.group_status(group_id)
        if code:
            return respond({tp: code for tp in offsets})
        group = self.groups.get(group_id)
        if group is None:
            group = self._new_group(group_id)
            group.unwritten = True
        if isinstance(group, ConsumerGroup):
            # Kafka's rule for both commits: a non-member only while the group is empty.
            code = _validate_consumer_member(group, generation, member_id)
            if code:
                return respond({tp: code for tp in offsets})
            return self._write_offsets(group, offsets, respond,
                                       producer=(producer_id, producer_epoch))
        if group.is_(S.DEAD):
            code = E.COORDINATOR_NOT_AVAILABLE
        elif group.static_fenced(member_id, instance_id):
            code = E.FENCED_INSTANCE_ID
        elif member_id and not group.has(member_id):
            code = E.UNKNOWN_MEMBER_ID
        elif generation >= 0 and generation != group.generation:
            code = E.ILLEGAL_GENERATION
        if code:
            return respond({tp: code for tp in offsets})
        self._write_offsets(group, offsets, respond, producer=(producer_id, producer_epoch))

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction's marker is committed in this partition of `__consumer_offsets`."""
        for gid, group in self.groups.items():
            if self.partition_of(gid) != partition:
                continue
            pending = group.pending_txn.pop(producer_id, None)
            if pending and commit:
                _materialize(group, pending)

    # -- OffsetFetch ----------------------------------------------------------------------
    def fetch_offsets(self, group_id: str, partitions: list[TP] | None,
                      require_stable: bool = False, member_id: str | None = None,
                      member_epoch: int = -1) -> tuple[int, dict]:
        """(error, {(topic, partition): (offset, leader_epoch, metadata, error)}); partitions
        None means every partition the group has an offset for. OffsetFetch v9 names the
        member of a consumer-protocol group, which must be current (Kafka's
        validateOffsetFetch); others (admin clients) send no member id and epoch -1."""
        code = self.group_status(group_id)
        if code:
            return code, {}
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and not (member_epoch < 0 and member_id is None):
            code = _validate_consumer_member(group, member_epoch, member_id or "")
            if code:
                return code, {}
        if group is None or _is_dead(group):
            return E.NONE, {tp: (-1, -1, "", E.NONE) for tp in partitions or ()}
        wanted = list(group.offsets) if partitions is None else partitions
        out = {}
        for tp in wanted:
            if require_stable and (tp in group.inflight_commits or any(
                    tp in p for p in group.pending_txn.values())):
                out[tp] = (-1, -1, "", E.UNSTABLE_OFFSET_COMMIT)
                continue
            c = group.offsets.get(tp)
            out[tp] = (-1, -1, "", E.NONE) if c is None else \
                (c.offset, c.leader_epoch, c.metadata, E.NONE)
        return E.NONE, out

    # -- OffsetDelete ---------------------------------------------------------------------
    def delete_offsets(self, group_id: str, partitions: list[TP],
                       respond: Callable[[int, dict], None]) -> None:
        code = self.group_status(group_id)
        if code:
            return respond(code, {})
        group = self.groups.get(group_id)
        if group is None or _is_dead(group):
            return respond(E.GROUP_ID_NOT_FOUND, {})
        subscribed: set[str] = set()
        if isinstance(group, ConsumerGroup):
            subscribed = self._topics_of(group.members.values())
        elif not group.is_(S.EMPTY):
            if group.protocol_type != "consumer":
                return respond(E.NON_EMPTY_GROUP, {})
            subscribed = group.subscribed_topics() or set()
        results: dict = {}
        records = []
        for tp in partitions:
            if tp[0] in subscribed:
                results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[tp] = E.NONE
            if group.offsets.pop(tp, None) is not None:
                records.append((L.encode_offset_key(group_id, *tp), None))
        if not records:
            return respond(E.NONE, results)
        self.store.write(self.partition_of(group_id), records,
                         lambda code, _o=-1: respond(E.NONE, results))

    # -- expiry ---------------------------------------------------------------------------
    def expire_offsets(self) -> int:
        """Kafka's offsets.retention.minutes: offsets of an empty group expire once the group
        has been empty that long; offsets of a group without group management (assign-mode
        commits) expire that long after their commit; an explicit retention from an old
        request wins. Groups left empty with no offsets are removed. Returns offsets expired."""
        now = self.clock()
        retention = self.config.retention_ms
        expired_total = 0
        for gid, group in list(self.groups.items()):
            if self.partitions.get(self.partition_of(gid)) != "loaded" or _is_dead(group):
                continue
            pending = {tp for p in group.pending_txn.values() for tp in p}
            consumer = isinstance(group, ConsumerGroup)
            if consumer:
                # Empty: expire from the moment it became empty; else unsubscribed topics.
                base_empty = group.state_timestamp_ms if group.is_empty() else None
                subscribed = self._topics_of(group.members.values())
            elif group.protocol_type is None or group.is_(S.EMPTY):
                base_empty = group.state_timestamp_ms if group.protocol_type else None
                subscribed: set[str] = set()
            elif group.protocol_type == "consumer" and group.is_(S.STABLE):
                base_empty = None
                subscribed = group.subscribed_topics() or {t for t, _ in group.offsets}
            else:
                continue
            expired = []
            for tp, c in group.offsets.items():
                if tp in pending or tp in group.inflight_commits or tp[0] in subscribed:
                    continue
                if c.expire_ms >= 0:
                    due = c.expire_ms
                elif base_empty is not None:
                    due = base_empty + retention
                else:
                    due = c.commit_ms + retention
                if now >= due:
                    expired.append(tp)
            records = [(L.encode_offset_key(gid, *tp), None) for tp in expired]
            for tp in expired:
                del group.offsets[tp]
            expired_total += len(expired)
            if consumer:
                if group.is_empty() and not group.offsets and not group.pending_txn \
                        and not group.inflight_commits and not group.inflight_writes:
                    records += CR.group_tombstones(group)
                    self._unload_consumer_group(group)
                    del self.groups[gid]
            elif group.is_(S.EMPTY) and not group.offsets and not group.pending_txn \
                    and not group.inflight_commits:
                group.transition(S.DEAD, now)
                del self.groups[gid]
                records.append((L.encode_group_key(gid), None))
            if records:
                self.store.write(self.partition_of(gid), records, lambda code, _o=-1: None)
        if expired_total:
            log.info("expired %d committed offset(s)", expired_total)
        return expired_total

    # -- loading --------------------------------------------------------------------------
    def load_partition(self, partition: int, batches: Iterable) -> None:
        """Rebuild the groups of one partition of `__consumer_offsets` from its batches."""
        self.partitions[partition] = "loading"
        offsets: dict[str, dict[TP, Committed]] = {}
        pending: dict[int, dict[str, dict[TP, Committed]]] = {}
        metadata: dict[str, L.GroupValue | None] = {}
        consumer: dict[str, dict] = {}      # group -> what its consumer-group records say
        share: dict[str, dict] = {}         # group -> what its share-group records say
        for b in batches:
            if b.is_control:
                groups = pending.pop(b.producer_id, {})
                if b.control_type == CONTROL_COMMIT:
                    for gid, tps in groups.items():
                        target = offsets.setdefault(gid, {})
                        for tp, c in tps.items():
                            cur = target.get(tp)
                            if cur is None or cur.log_offset < c.log_offset:
                                target[tp] = c
                continue
            for r in b.records:
                try:
                    key = L.decode_key(r.key) if r.key is not None else None
                except Exception:
                    log.warning("skipping an unreadable key at %s-%d offset %d",
                                "__consumer_offsets", partition, r.offset)
                    continue
                if isinstance(key, L.OffsetKey):
                    tp = (key.topic, key.partition)
                    if b.is_transactional:
                        target = pending.setdefault(b.producer_id, {}).setdefault(
                            key.group, {})
                    else:
                        target = offsets.setdefault(key.group, {})
                    if r.value is None:
                        target.pop(tp, None)
                        continue
                    v = L.decode_offset_value(r.value)
                    target[tp] = Committed(v.offset, v.leader_epoch, v.metadata,
                                           v.commit_timestamp, v.expire_timestamp, r.offset)
                elif isinstance(key, L.GroupKey):
                    metadata[key.group] = None if r.value is None else \
                        L.decode_group_value(r.value)
                elif isinstance(key, CR.ConsumerKey):
                    try:
                        _replay_consumer(consumer.setdefault(key.group, {}), key, r.value)
                    except Exception:
                        log.warning("skipping an unreadable consumer group record at %s-%d "
                                    "offset %d", "__consumer_offsets", partition, r.offset)
                elif isinstance(key, SR.ShareKey):
                    try:
                        SR.replay(share.setdefault(key.group, {}), key, r.value)
                    except Exception:
                        log.warning("skipping an unreadable share group record at %s-%d "
                                    "offset %d", "__consumer_offsets", partition, r.offset)
        now = self.clock()
        for gid in set(offsets) | set(metadata) | set(consumer) | \
                {g for p in pending.values() for g in p}:
            value = metadata.get(gid)
            cg = self._consumer_group_from_records(gid, consumer[gid]) \
                if gid in consumer else None
            if cg is not None:
                cg.offsets = offsets.get(gid, {})
                cg.pending_txn = {pid: groups[gid] for pid, groups in pending.items()
                                  if gid in groups}
                self.groups[gid] = cg
                self._start_consumer_group_timers(cg)
                continue
            g = self._group_from_value(gid, value, now)
            g.offsets = offsets.get(gid, {})
            g.pending_txn = {pid: groups[gid] for pid, groups in pending.items() if gid in groups}
            if value is None and not g.offsets and not g.pending_txn:
                continue
            self.groups[gid] = g
            for m in g.members.values():
                self._schedule_heartbeat(g, m)
        if self.share_groups is not None:
            # share groups' membership lives in the share service (share/membership.py)
            self.share_groups.load(partition, share)
        self.partitions[partition] = "loaded"

    def _group_from_value(self, gid: str, value: L.GroupValue | None, now: int) -> Group:
        g = Group(gid, state_timestamp_ms=now)
        if value is None:
            return g
        g.protocol_type = value.protocol_type or None
        g.generation = value.generation
        g.protocol_name = value.protocol
        g.state_timestamp_ms = value.current_state_timestamp if \
            value.current_state_timestamp >= 0 else now
        for mv in value.members:
            protocols = [(value.protocol, mv.subscription)] if value.protocol else []
            m = Member(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                       mv.rebalance_timeout, mv.session_timeout, value.protocol_type,
                       protocols, assignment=mv.assignment)
            g.add(m)
        g.leader_id = value.leader if value.leader in g.members else g.leader_id
        # Members come back Stable (they keep heartbeating with their generation) and are
        # expired as usual if they are gone.
        g.state = S.STABLE if g.members else S.EMPTY
        return g


def _materialize(group: Group, pending: dict[TP, Committed]) -> None:
    for tp, c in pending.items():
        cur = group.offsets.get(tp)
        if cur is None or cur.log_offset < c.log_offset:
            group.offsets[tp] = c


def _is_dead(group) -> bool:
    return group.dead if isinstance(group, ConsumerGroup) else group.is_(S.DEAD)


def _validate_consumer_member(group: ConsumerGroup, epoch: int, member_id: str) -> int:
    """Offsets of a consumer-protocol group (Kafka's validateOffsetCommit/Fetch): epoch -1
    from a non-member is accepted while the group is empty (consumers that assign their own
    partitions, admin tools); otherwise the member must exist with that very epoch."""
    if group.dead:
        return E.COORDINATOR_NOT_AVAILABLE
    if epoch < 0 and not group.members:
        return E.NONE
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch != member.member_epoch:
        return E.STALE_MEMBER_EPOCH
    return E.NONE


def _replay_consumer(recs: dict, key, value: bytes | None) -> None:
    """Apply one consumer-group record to what replay knows of its group (last one wins; a
    tombstone removes)."""
    kind = key.kind
    v = None if value is None else CR.decode_value(kind, value)
    if kind == CR.GROUP_METADATA:
        if v is None:
            recs.clear()
        else:
            recs["epoch"] = v["epoch"]
    elif kind == CR.PARTITION_METADATA:
        recs["meta"] = None if v is None else v["topics"]
    elif kind == CR.TARGET_METADATA:
        recs["target_epoch"] = None if v is None else v["assignment_epoch"]
    else:
        field = {CR.MEMBER_METADATA: "members", CR.TARGET_MEMBER: "target",
                 CR.CURRENT_MEMBER: "current"}[kind]
        per = recs.setdefault(field, {})
        if v is None:
            per.pop(key.member_id, None)
        elif kind == CR.TARGET_MEMBER:
            per[key.member_id] = CR.from_tps(v["topic_partitions"])
        else:
            per[key.member_id] = v
