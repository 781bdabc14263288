"""Share-group membership (KIP-932): ShareGroupHeartbeat's join, heartbeat and leave, member
epochs, session timeouts and the group coordinator's assignment.

Share groups need no reconciliation: a partition may be handed to several members at once,
so a member moves straight to its new assignment and its epoch to the group's. The group
epoch goes up when a member joins, leaves, changes its subscription, or the subscribed
topics' partitions change; the assignment is then computed again by the simple assignor:
with M members subscribed to a topic of P partitions, each partition goes to ceil(M/P) of
them, so three members of a one-partition topic all get partition 0, and four partitions
over two members give each two.

Sans-I/O: `metadata.topic(name) -> (topic id, partitions) | None`, timers with
call_later(ms, fn) and `now_ms()` come from outside; `on_member_gone(group, member)` lets the
share-partitions release what a fenced or departed member held.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...protocol.errors import ErrorCode

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
    assignment: dict = field(default_factory=dict)        # topic id bytes -> [partitions]
    timer: object = None


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict = field(default_factory=dict)           # member id -> ShareMember
    fingerprint: tuple = ()                               # what the assignment was made from

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
                 on_member_gone: Callable[[str, str], None]):
        self.timers = timers
        self.now_ms = now_ms
        self.metadata = metadata
        self.settings = settings               # group id -> its effective share settings
        self.max_size = max_size
        self.on_member_gone = on_member_gone
        self.groups: dict[str, ShareGroup] = {}

    # -- ShareGroupHeartbeat -----------------------------------------------------------------

    def heartbeat(self, request: dict, client_id: str, client_host: str) -> dict:
        """The response body of one heartbeat (raises HeartbeatError for an error answer)."""
        group_id, member_id = request["group_id"], request["member_id"]
        epoch = request["member_epoch"]
        self._validate(request)
        cfg = self.settings(group_id)
        if epoch == LEAVE_EPOCH:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                self._remove(group, member_id)
            return self._answer(member_id, LEAVE_EPOCH, cfg, None)
        group = self.groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"member {member_id} is not in share group {group_id}")
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"member {member_id} is not in share group {group_id}")
            if len(group.members) >= self.max_size:
                raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                                     f"share group {group_id} already has {self.max_size} "
                                     f"members (group.share.max.size)")
            member = group.members[member_id] = ShareMember(member_id)
        elif epoch not in (0, member.epoch):
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                                 f"member epoch {epoch} is not the current {member.epoch}")
        member.client_id, member.client_host = client_id, client_host
        if request.get("rack_id") is not None:
            member.rack_id = request["rack_id"]
        if request.get("subscribed_topic_names") is not None:
            member.subscribed = tuple(sorted(set(request["subscribed_topic_names"])))
        joined = epoch == 0
        self._maybe_reassign(group)
        self._arm_session(group, member, cfg["session_timeout_ms"])
        changed = member.epoch != group.assignment_epoch
        if changed or joined:
            member.epoch = group.assignment_epoch
            return self._answer(member_id, member.epoch, cfg, member.assignment)
        return self._answer(member_id, member.epoch, cfg, None)

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

    def _fingerprint(self, group: ShareGroup) -> tuple:
        members = tuple(sorted((m.member_id, m.subscribed) for m in group.members.values()))
        topics = sorted({t for m in group.members.values() for t in m.subscribed})
        return members, tuple((t, self.metadata.topic(t)) for t in topics)

    def _maybe_reassign(self, group: ShareGroup) -> None:
        fp = self._fingerprint(group)
        if fp == group.fingerprint:
            return
        group.fingerprint = fp
        group.epoch += 1
        target = simple_assignment(list(group.members.values()), self.metadata)
        for mid, m in group.members.items():
            m.assignment = target.get(mid, {})
        group.assignment_epoch = group.epoch

    def refresh(self, group_id: str) -> None:
        """Topics changed (created, deleted, partitions added): assign again if needed."""
        group = self.groups.get(group_id)
        if group is not None and group.members:
            self._maybe_reassign(group)

    # -- leaving and timing out --------------------------------------------------------------

    def _arm_session(self, group: ShareGroup, member: ShareMember, timeout_ms: int) -> None:
        if member.timer is not None:
            member.timer.cancel()
        gid, mid = group.group_id, member.member_id
        member.timer = self.timers.call_later(timeout_ms, lambda: self._expire(gid, mid, member))

    def _expire(self, group_id: str, member_id: str, member: ShareMember) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.members.get(member_id) is member:
            self._remove(group, member_id)

    def _remove(self, group: ShareGroup, member_id: str) -> None:
        member = group.members.pop(member_id)
        if member.timer is not None:
            member.timer.cancel()
        self._maybe_reassign(group)
        self.on_member_gone(group.group_id, member_id)

    def delete(self, group_id: str) -> int:
        """DeleteGroups: only an empty group goes (NON_EMPTY_GROUP otherwise)."""
        group = self.groups.get(group_id)
        if group is None:
            return E.GROUP_ID_NOT_FOUND
        if group.members:
            return E.NON_EMPTY_GROUP
        del self.groups[group_id]
        return E.NONE

    def close(self) -> None:
        for g in self.groups.values():
            for m in g.members.values():
                if m.timer is not None:
                    m.timer.cancel()
