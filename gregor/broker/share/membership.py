"""Share-group membership (KIP-932): ShareGroupHeartbeat's join, heartbeat and leave, member
epochs, session timeouts and the group coordinator's assignment.

Share groups need no reconciliation: a partition may be handed to several members at once,
so a member moves straight to its new assignment and its epoch to the group's. The group
epoch goes up when a member joins, leaves, changes its subscription, or the subscribed
topics' partitions change; the assignment is then computed again by the simple assignor:
with M members subscribed to a topic of P partitions, each partition goes to ceil(M/P) of
them, so three members of a one-partition topic all get partition 0, and four partitions
over two members give each two.

Durable as Kafka's group coordinator keeps it: every change is written to
`__consumer_offsets` in Kafka's share-group records (group_records.py) before the heartbeat is
answered (the member record when a member joins or changes, the group epoch when it moves, the
target assignment of every member it changed and its epoch, the member's current assignment
when its epoch moves, the share-partitions the group was handed, tombstones when a member
leaves or the group is deleted). A heartbeat that changed nothing still waits for the group's
earlier writes, so no answer shows state that could be lost. After a failed write the state
computed is kept and the next write is a snapshot of the whole group. When the coordinator
loads a partition of the topic (broker start, becoming its leader) its share groups come back
from the records with their epochs, members and assignments; each member's session timer
starts then, so a member that never heartbeats again is removed as usual.

Sans-I/O: `metadata.topic(name) -> (topic id, partitions) | None`, timers with
call_later(ms, fn) and `now_ms()` come from outside; `store(group id, records, done(code))`
writes to the group's coordinator partition, `partition_of(group id)` names it;
`on_member_gone(group, member)` lets the share-partitions release what a fenced or departed
member held.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from ...protocol.errors import ErrorCode
from ..group.member_records import write_then
from . import group_records as R

log = logging.getLogger("gregor.broker.share")
E = ErrorCode
LEAVE_EPOCH = -1
ASSIGNOR = "simple"


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ShareMember:
    member_id: str
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    subscribed: tuple = ()
    epoch: int = 0
    previous_epoch: int = 0
    assignment: dict = field(default_factory=dict)        # topic id bytes -> [partitions]
    timer: object = None
    # the member's current assignment as last written (epoch, assignment)
    written: tuple = ()


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict = field(default_factory=dict)           # member id -> ShareMember
    fingerprint: tuple = ()                               # what the assignment was made from
    # the share-partitions handed to the group: topic id -> (name, {partitions}, created ms)
    initialized: dict = field(default_factory=dict)
    inflight_writes: int = 0
    after_writes: list = field(default_factory=list)      # (ok, failed) waiting for them
    write_failed: int = 0
    lost_writes: set = field(default_factory=set)         # removed members ("" marker)
    deleted: bool = False

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


def simple_assignment(members: list[ShareMember], metadata) -> dict[str, dict]:
    """member id -> {topic id: sorted partitions} (Kafka's SimpleAssignor for share groups)."""
    out: dict[str, dict] = {m.member_id: {} for m in members}
    topics = sorted({t for m in members for t in m.subscribed})
    for name in topics:
        meta = metadata.topic(name)
        if meta is None:
            continue
        topic_id, count = meta
        subs = sorted(m.member_id for m in members if name in m.subscribed)
        if not subs or count <= 0:
            continue
        sharing = -(-len(subs) // count)
        for p in range(count):
            for k in range(sharing):
                mid = subs[(p * sharing + k) % len(subs)]
                parts = out[mid].setdefault(topic_id, [])
                if p not in parts:
                    parts.append(p)
    return out


class ShareMembership:
    def __init__(self, timers, now_ms: Callable[[], int], metadata,
                 settings: Callable[[str], dict], max_size: int,
                 on_member_gone: Callable[[str, str], None], store=None,
                 partition_of: Callable[[str], int] | None = None):
        self.timers = timers
        self.now_ms = now_ms
        self.metadata = metadata
        self.settings = settings               # group id -> its effective share settings
        self.max_size = max_size
        self.on_member_gone = on_member_gone
        self.store = store                     # (group id, records, done(code)) | None
        self.partition_of = partition_of
        self.groups: dict[str, ShareGroup] = {}

    # -- ShareGroupHeartbeat -----------------------------------------------------------------

    def heartbeat(self, request: dict, client_id: str, client_host: str,
                  respond: Callable[[dict], None],
                  failed: Callable[[int, str | None], None]) -> None:
        """respond(body) once what the heartbeat changed is written; failed(code, message)
        for an error answer."""
        try:
            group, records, body = self._heartbeat(request, client_id, client_host)
        except HeartbeatError as e:
            failed(e.code, e.message)
            return
        if group is None:
            respond(body)
            return
        self._write_then(group, records, lambda: respond(body),
                         lambda code: failed(code, None))

    def _heartbeat(self, request: dict, client_id: str, client_host: str):
        group_id, member_id = request["group_id"], request["member_id"]
        epoch = request["member_epoch"]
        self._validate(request)
        cfg = self.settings(group_id)
        records: list = []
        if epoch == LEAVE_EPOCH:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                self._remove(group, member_id, records)
            return group, records, self._answer(member_id, LEAVE_EPOCH, cfg, None)
        group = self.groups.get(group_id)
        created = group is None
        if created:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"member {member_id} is not in share group {group_id}")
            group = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"member {member_id} is not in share group {group_id}")
            if len(group.members) >= self.max_size:
                raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                                     f"share group {group_id} already has {self.max_size} "
                                     f"members (group.share.max.size)")
            member = ShareMember(member_id)
        elif epoch not in (0, member.epoch):
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                                 f"member epoch {epoch} is not the current {member.epoch}")
        if created:
            self.groups[group_id] = group
        group.members[member_id] = member
        before = (member.rack_id, member.client_id, member.client_host, member.subscribed)
        member.client_id, member.client_host = client_id, client_host
        if request.get("rack_id") is not None:
            member.rack_id = request["rack_id"]
        if request.get("subscribed_topic_names") is not None:
            member.subscribed = tuple(sorted(set(request["subscribed_topic_names"])))
        if before != (member.rack_id, member.client_id, member.client_host,
                      member.subscribed) or epoch == 0:
            records.append(R.member_record(group_id, member))
        joined = epoch == 0
        self._maybe_reassign(group, records)
        self._arm_session(group, member, cfg["session_timeout_ms"])
        changed = member.epoch != group.assignment_epoch
        if changed or joined:
            if changed:
                member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch
            self._current(group, member, records)
            return group, records, self._answer(member_id, member.epoch, cfg,
                                                member.assignment)
        self._current(group, member, records)
        return group, records, self._answer(member_id, member.epoch, cfg, None)

    def _current(self, group: ShareGroup, member: ShareMember, records: list) -> None:
        """The member's current assignment record, when it differs from the one written."""
        now = (member.epoch, R.tps(member.assignment))
        if member.written != now:
            member.written = now
            records.append(R.current_record(group.group_id, member))

    def _validate(self, r: dict) -> None:
        def invalid(msg: str):
            raise HeartbeatError(E.INVALID_REQUEST, msg)
        if not r["group_id"]:
            invalid("GroupId can't be empty.")
        if not r["member_id"]:
            invalid("MemberId can't be empty.")
        if len(r["member_id"]) > 36:
            invalid("MemberId can't be longer than 36 characters.")
        if r.get("rack_id") == "":
            invalid("RackId can't be empty.")
        epoch = r["member_epoch"]
        if epoch < LEAVE_EPOCH:
            invalid(f"MemberEpoch {epoch} is invalid.")
        if epoch == 0 and not r.get("subscribed_topic_names"):
            invalid("SubscribedTopicNames must be set in first request.")

    @staticmethod
    def _answer(member_id: str, epoch: int, cfg: dict, assignment) -> dict:
        body = {"error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": epoch, "heartbeat_interval_ms": cfg["heartbeat_interval_ms"],
                "assignment": None}
        if assignment is not None:
            body["assignment"] = {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)} for t, ps in assignment.items()]}
        return body

    # -- assignment --------------------------------------------------------------------------

    def _topics(self, group: ShareGroup) -> tuple:
        topics = sorted({t for m in group.members.values() for t in m.subscribed})
        return tuple((t, self.metadata.topic(t)) for t in topics)

    def _fingerprint(self, group: ShareGroup) -> tuple:
        members = tuple(sorted((m.member_id, m.subscribed) for m in group.members.values()))
        return members, self._topics(group)

    def _maybe_reassign(self, group: ShareGroup, records: list) -> None:
        fp = self._fingerprint(group)
        if fp == group.fingerprint:
            return
        group.fingerprint = fp
        group.epoch += 1
        gid = group.group_id
        records.append(R.group_epoch_record(gid, group.epoch, R.metadata_hash(fp[1])))
        target = simple_assignment(list(group.members.values()), self.metadata)
        for mid, m in group.members.items():
            new = target.get(mid, {})
            if R.tps(new) != R.tps(m.assignment) or not m.written:
                records.append(R.target_record(gid, mid, new))
            m.assignment = new
        group.assignment_epoch = group.epoch
        records.append(R.target_epoch_record(gid, group.assignment_epoch))
        self._track_initialized(group, fp[1], records)

    def _track_initialized(self, group: ShareGroup, topics: tuple, records: list) -> None:
        """The share-partitions the group has been handed (Kafka's StatePartitionMetadata):
        grown by each assignment, and cut to the topics that still exist."""
        live = {meta[0]: (name, meta[1]) for name, meta in topics if meta is not None}
        changed = False
        for m in group.members.values():
            for tid, parts in m.assignment.items():
                name = live.get(tid, (self.metadata.name(tid) or "",))[0]
                entry = group.initialized.get(tid)
                if entry is None:
                    group.initialized[tid] = (name, set(parts), self.now_ms())
                    changed = True
                elif not set(parts) <= entry[1]:
                    entry[1].update(parts)
                    changed = True
        for tid in list(group.initialized):
            if tid not in live and self.metadata.name(tid) is None:
                del group.initialized[tid]          # the topic was deleted
                changed = True
        if changed:
            records.append(R.state_partitions_record(group.group_id, group.initialized))

    def forget_topics(self, group_id: str, topic_ids) -> None:
        """DeleteShareGroupOffsets removed these topics' share-partitions: no longer
        initialized (written without anyone waiting)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        gone = [t for t in topic_ids if t in group.initialized]
        for t in gone:
            del group.initialized[t]
        if gone:
            self._write_then(group, [R.state_partitions_record(group_id, group.initialized)],
                             lambda: None, lambda c: None)

    def refresh(self, group_id: str) -> None:
        """Topics changed (created, deleted, partitions added): assign again if needed."""
        group = self.groups.get(group_id)
        if group is not None and group.members:
            records: list = []
            self._maybe_reassign(group, records)
            if records:
                self._write_then(group, records, lambda: None, lambda c: None)

    # -- leaving and timing out --------------------------------------------------------------

    def _arm_session(self, group: ShareGroup, member: ShareMember, timeout_ms: int) -> None:
        if member.timer is not None:
            member.timer.cancel()
        gid, mid = group.group_id, member.member_id
        member.timer = self.timers.call_later(timeout_ms, lambda: self._expire(gid, mid, member))

    def _expire(self, group_id: str, member_id: str, member: ShareMember) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.members.get(member_id) is member:
            records: list = []
            self._remove(group, member_id, records)
            self._write_then(group, records, lambda: None, lambda c: None)

    def _remove(self, group: ShareGroup, member_id: str, records: list) -> None:
        member = group.members.pop(member_id)
        if member.timer is not None:
            member.timer.cancel()
        records.extend(R.member_tombstones(group.group_id, member_id))
        self._maybe_reassign(group, records)
        self.on_member_gone(group.group_id, member_id)

    def delete(self, group_id: str, done: Callable[[int], None] | None = None) -> int:
        """DeleteGroups: only an empty group goes (NON_EMPTY_GROUP otherwise); its records
        are deleted with tombstones, done(code) once they are written."""
        group = self.groups.get(group_id)
        if group is None:
            return E.GROUP_ID_NOT_FOUND
        if group.members:
            return E.NON_EMPTY_GROUP
        del self.groups[group_id]
        group.deleted = True
        records = R.group_tombstones(group_id, group.lost_writes - {""})
        self._write_then(group, records, lambda: done and done(E.NONE),
                         lambda c: done and done(c))
        return E.NONE

    # -- writing -----------------------------------------------------------------------------

    def _write_then(self, group: ShareGroup, records: list, ok: Callable[[], None],
                    failed: Callable[[int], None]) -> None:
        """Write the records, then answer (group/member_records.write_then)."""
        if self.store is None:
            ok()
            return
        write_then(group, records, ok, failed,
                   write=lambda recs, done: self.store(group.group_id, recs, done),
                   snapshot=lambda removed: self._snapshot(group, removed),
                   removed=R.removed_members, gone=group.deleted)

    def _snapshot(self, group: ShareGroup, removed) -> list:
        gid = group.group_id
        records = []
        for mid in sorted(set(removed) - set(group.members) - {""}):
            records.extend(R.member_tombstones(gid, mid))
        records.append(R.group_epoch_record(gid, group.epoch,
                                            R.metadata_hash(self._topics(group))))
        for mid, m in group.members.items():
            records.append(R.member_record(gid, m))
            records.append(R.target_record(gid, mid, m.assignment))
        records.append(R.target_epoch_record(gid, group.assignment_epoch))
        for m in group.members.values():
            m.written = (m.epoch, R.tps(m.assignment))
            records.append(R.current_record(gid, m))
        records.append(R.state_partitions_record(gid, group.initialized))
        return records

    # -- loading -----------------------------------------------------------------------------

    def load(self, partition: int, groups: dict) -> None:
        """The share groups of a `__consumer_offsets` partition, from what replaying its
        records kept (group_records.replay). Members come back with their epochs and
        assignments; their session timers start now."""
        self.unload(partition)
        for gid, recs in groups.items():
            if recs.get("epoch") is None:
                continue
            group = ShareGroup(gid, epoch=recs["epoch"],
                               assignment_epoch=recs.get("target_epoch") or 0,
                               initialized=dict(recs.get("initialized") or {}))
            targets = recs.get("target", {})
            for mid, v in recs.get("members", {}).items():
                m = ShareMember(mid, client_id=v["client_id"], client_host=v["client_host"],
                                rack_id=v["rack_id"],
                                subscribed=tuple(sorted(set(v["subscribed_topic_names"]))))
                m.assignment = {t: list(ps) for t, ps in targets.get(mid, {}).items()}
                cur = recs.get("current", {}).get(mid)
                if cur is not None:
                    m.epoch, m.previous_epoch = cur["member_epoch"], cur["previous_member_epoch"]
                    m.written = (m.epoch, R.tps(R.from_tps(cur["assigned_partitions"])))
                group.members[mid] = m
            fp = self._fingerprint(group)
            # the assignment stands if the topics are as they were when it was made;
            # otherwise the next heartbeat makes a new one (a new group epoch)
            group.fingerprint = fp if R.metadata_hash(fp[1]) == recs.get("hash") else ()
            self.groups[gid] = group
            timeout = self.settings(gid)["session_timeout_ms"]
            for m in group.members.values():
                self._arm_session(group, m, timeout)
        if groups:
            log.info("loaded %d share group(s) from __consumer_offsets-%d",
                     sum(1 for r in groups.values() if r.get("epoch") is not None), partition)

    def unload(self, partition: int) -> None:
        """The partition is no longer this coordinator's: forget its share groups (their
        members will find the new coordinator)."""
        if self.partition_of is None:
            return
        for gid in [g for g in self.groups if self.partition_of(g) == partition]:
            for m in self.groups.pop(gid).members.values():
                if m.timer is not None:
                    m.timer.cancel()

    def close(self) -> None:
        for g in self.groups.values():
            for m in g.members.values():
                if m.timer is not None:
                    m.timer.cancel()
