"""KIP-848 consumer groups in the coordinator: ConsumerGroupHeartbeat (join, heartbeat,
reconcile, leave), session and rebalance timeouts, describe, and the group's records.

Kept without I/O like the classic protocol (coordinator.py): the same store, timers and clock
ports, plus `metadata`, which answers `topic(name) -> (topic id, partition count) | None` and
`name(topic id) -> name | None` from the broker's topics.

One heartbeat, in Kafka's order:
1. the member is created or updated (subscription, assignor, rebalance timeout, client);
2. the group epoch goes up if the member is new, changed its subscription or assignor, or
   the subscribed topics' metadata changed (partitions added, topics created or deleted);
3. if the group epoch is ahead of the target assignment's, the assignor computes a new target
   for every member (assignors.py);
4. the member's current assignment moves towards its target (reconciliation.py).
What changed is written to `__consumer_offsets` (consumer_records.py) and the answer leaves once
it is committed; a heartbeat that changed nothing still waits for the group's earlier writes,
so no answer shows state that could be lost.
"""
from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import replace
from typing import Callable

from ...protocol.errors import ErrorCode
from . import consumer_records as R
from . import log_records as L
from . import topic_regex
from .assignors import ASSIGNORS
from .consumer_group import (LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerMember,
                             MemberState, copy_assignment)
from .reconciliation import FencedMember, reconcile
from .member_records import write_then

log = logging.getLogger("gregor.broker.group")
E = ErrorCode


class HeartbeatError(Exception):
    """An answer with an error; `records` (with their group) are changes already made that
    must still be written."""

    def __init__(self, code: int, message: str, group=None, records=()):
        super().__init__(message)
        self.code = code
        self.message = message
        self.group = group
        self.records = list(records)


def _error(code: int, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


def _is_subset(owned, assigned: dict) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(t, ()) for t, ps in owned for p in ps)


class ConsumerGroupsMixin:
    """KIP-848 handling of GroupCoordinator (needs its groups, store, timers, clock, config,
    metadata)."""

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------
    def consumer_heartbeat(self, request: dict, version: int, client_id: str,
                           client_host: str, respond: Callable[[dict], None]) -> None:
        group_id = request["group_id"]
        code = self.group_status(group_id)
        if code:
            return respond(_error(code))
        try:
            self._validate_heartbeat(request, version)
            epoch = request["member_epoch"]
            if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                group, records, answer = self._consumer_leave(request)
            else:
                group, records, answer = self._consumer_join_or_heartbeat(
                    request, client_id, client_host)
        except HeartbeatError as e:
            if e.code == E.INVALID_REQUEST:
                log.info("group %s: ConsumerGroupHeartbeat refused: %s", group_id, e.message)
            if e.records:
                # bound now: `e` is unset once the except clause ends, and the write may
                # complete later
                code, message = e.code, e.message
                return self._write_then(e.group, e.records,
                                        lambda: respond(_error(code, message)),
                                        lambda c: respond(_error(c)))
            return respond(_error(e.code, e.message))
        self._write_then(group, records, lambda: respond(answer),
                         lambda c: respond(_error(c)))

    def _validate_heartbeat(self, r: dict, version: int) -> None:
        def invalid(msg: str):
            raise HeartbeatError(E.INVALID_REQUEST, msg)
        if r["instance_id"] == "":
            invalid("InstanceId can't be empty.")
        if r["rack_id"] == "":
            invalid("RackId can't be empty.")
        regex = r.get("subscribed_topic_regex")
        if regex:
            try:
                topic_regex.compile_pattern(regex)
            except topic_regex.InvalidRegex as e:
                raise HeartbeatError(E.INVALID_REGULAR_EXPRESSION,
                                     f"SubscribedTopicRegex {regex!r} is not a valid regular "
                                     f"expression: {e}.")
        epoch = r["member_epoch"]
        if version >= 1 and not r["member_id"]:
            invalid("MemberId can't be empty.")
        if epoch > 0 or epoch == LEAVE_EPOCH:
            if not r["member_id"]:
                invalid("MemberId can't be empty.")
        elif epoch == 0:
            if r["rebalance_timeout_ms"] == -1:
                invalid("RebalanceTimeoutMs must be provided in first request.")
            if r["topic_partitions"] is None or r["topic_partitions"]:
                invalid("TopicPartitions must be empty when (re-)joining.")
            if not r["subscribed_topic_names"] and not regex:
                invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first "
                        "request.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if not r["member_id"]:
                invalid("MemberId can't be empty.")
            if r["instance_id"] is None:
                invalid("InstanceId can't be null.")
        else:
            invalid("MemberEpoch is invalid.")
        assignor = r["server_assignor"]
        if assignor is not None and assignor not in self._assignors():
            raise HeartbeatError(E.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {assignor} is not supported. Supported "
                                 f"assignors: {', '.join(self._assignors())}.")

    def _assignors(self) -> list[str]:
        return [a for a in self.config.consumer_assignors if a in ASSIGNORS]

    def _consumer_group(self, group_id: str, create: bool, records: list) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and not group.dead:
            return group
        if group is None or getattr(group, "dead", False):
            if not create:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND,
                                     f"Consumer group {group_id} not found.")
        elif not (create and not group.members and not group.pending_members
                  and group.protocol_name is None):
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND,
                                 f"Group {group_id} is not a consumer group.")
        else:
            # An empty classic group (offsets only) becomes a consumer group, keeping its
            # offsets; its classic record is deleted.
            records.append((L.encode_group_key(group_id), None))
        # Registered in `groups` by the caller once the heartbeat is accepted.
        cg = ConsumerGroup(group_id, state_timestamp_ms=self.clock())
        if group is not None:
            cg.offsets, cg.pending_txn = group.offsets, group.pending_txn
            cg.inflight_commits = group.inflight_commits
        return cg

    def _consumer_join_or_heartbeat(self, r: dict, client_id: str, client_host: str):
        group_id, member_id, epoch = r["group_id"], r["member_id"], r["member_epoch"]
        instance_id = r["instance_id"]
        owned = None if r["topic_partitions"] is None else \
            [(bytes(t["topic_id"]), list(t["partitions"])) for t in r["topic_partitions"]]
        records: list = []
        create = epoch == 0
        group = self._consumer_group(group_id, create, records)
        if len(group.members) >= self.config.consumer_max_size and \
                (not member_id or member_id not in group.members):
            raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                                 "The consumer group has reached its maximum capacity of "
                                 f"{self.config.consumer_max_size} members.")
        if not member_id:
            # v0: the coordinator names the member, as Kafka's Uuid.toString() spells it
            member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        replaced: ConsumerMember | None = None
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not create:
                    raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group "
                                         f"{group_id}.")
                member = ConsumerMember(member_id)
                log.info("group %s: member %s joins (consumer protocol)", group_id, member_id)
            self._check_epoch(member, epoch, owned)
        else:
            existing = group.static_member(instance_id)
            if create:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                    log.info("group %s: static member %s (%s) joins (consumer protocol)",
                             group_id, member_id, instance_id)
                else:
                    if existing.member_epoch != STATIC_LEAVE_EPOCH:
                        raise HeartbeatError(E.UNRELEASED_INSTANCE_ID,
                                             f"Static member {existing.member_id} with instance "
                                             f"id {instance_id} is not released yet.")
                    # The static member comes back: a copy under its new member id.
                    replaced = existing
                    member = replace(existing, member_id=member_id, member_epoch=0,
                                     previous_member_epoch=0, session_timer=None,
                                     rebalance_timer=None,
                                     assigned=copy_assignment(existing.assigned),
                                     pending_revocation={})
            else:
                member = _current_static_member(existing, instance_id, member_id)
                self._check_epoch(member, epoch, owned)
        is_new = member_id not in group.members
        self.groups[group_id] = group           # accepted: from here on it changes

        updated = replace(member, client_id=client_id, client_host=client_host)
        if instance_id is not None:
            updated.instance_id = instance_id
        if r["rack_id"] is not None:
            updated.rack_id = r["rack_id"]
        if r["rebalance_timeout_ms"] != -1:
            updated.rebalance_timeout_ms = r["rebalance_timeout_ms"]
        if r["server_assignor"] is not None:
            updated.server_assignor = r["server_assignor"]
        if r["subscribed_topic_names"] is not None:
            updated.subscribed_topic_names = tuple(sorted(set(r["subscribed_topic_names"])))
        if r.get("subscribed_topic_regex") is not None:
            # An empty regex means none (librdkafka sends one beside topic names).
            updated.subscribed_topic_regex = r["subscribed_topic_regex"] or None

        if replaced is not None:
            self._replace_static(group, replaced, updated, records)
        bump = False
        if is_new or replaced is not None or updated.metadata_key() != member.metadata_key():
            records.append(R.member_record(group_id, updated))
            bump = tuple(updated.subscribed_topic_names) != tuple(member.subscribed_topic_names) \
                or updated.subscribed_topic_regex != member.subscribed_topic_regex \
                or updated.server_assignor != member.server_assignor
        others = [m for mid, m in group.members.items() if mid != member_id]
        meta = self._subscription_metadata(self._topics_of(others + [updated]))
        if meta != group.subscription_metadata:
            bump = True
            group.subscription_metadata = meta
            records.append(R.partition_metadata_record(group_id, meta))
        if bump:
            group.group_epoch += 1
            records.append(R.group_epoch_record(group_id, group.group_epoch))
            self._count("consumer_rebalances")
            log.info("group %s: group epoch %d", group_id, group.group_epoch)
        # The member is part of the group from here on (the target includes it).
        group.add_or_replace(updated)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, records)
        before = updated
        try:
            updated = reconcile(updated, group.assignment_epoch,
                                group.target.get(member_id, {}), group.partition_epoch, owned)
        except FencedMember as e:
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH, str(e), group, records)
        if updated is not before:
            if updated.assignment_key() != before.assignment_key() or is_new:
                records.append(R.current_record(group_id, updated))
            group.add_or_replace(updated)
        elif is_new or replaced is not None:
            records.append(R.current_record(group_id, updated))
        if updated.state is MemberState.UNREVOKED_PARTITIONS:
            if before.state is not MemberState.UNREVOKED_PARTITIONS or \
                    before.member_epoch != updated.member_epoch or updated.rebalance_timer is None:
                self._schedule_rebalance_timeout(group, updated)
        else:
            self._cancel(updated, "rebalance_timer")
        self._schedule_session_timeout(group, updated)
        full = epoch == 0 or (r["rebalance_timeout_ms"] != -1 and
                              r["subscribed_topic_names"] is not None and owned is not None)
        answer = {"error_code": E.NONE, "error_message": None, "member_id": member_id,
                  "member_epoch": updated.member_epoch,
                  "heartbeat_interval_ms": self.config.consumer_heartbeat_interval_ms,
                  "assignment": None}
        if full or R.tps(updated.assigned) != R.tps(member.assigned) or is_new:
            answer["assignment"] = {"topic_partitions": R.tps(updated.assigned)}
        return group, records, answer

    def _check_epoch(self, member: ConsumerMember, epoch: int, owned) -> None:
        if epoch > member.member_epoch:
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                                 f"The member has a greater epoch ({epoch}) than the "
                                 f"coordinator's ({member.member_epoch}); it must abandon its "
                                 "partitions and rejoin.")
        if epoch < member.member_epoch and (epoch != member.previous_member_epoch or
                                            not _is_subset(owned, member.assigned)):
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                                 f"The member has a smaller epoch ({epoch}) than the "
                                 f"coordinator's ({member.member_epoch}); it must abandon its "
                                 "partitions and rejoin.")

    def _replace_static(self, group: ConsumerGroup, old: ConsumerMember,
                        new: ConsumerMember, records: list) -> None:
        """A static member's new incarnation takes the old one's place and target."""
        target = group.target.get(old.member_id, {})
        self._cancel(old, "session_timer")
        self._cancel(old, "rebalance_timer")
        group.remove(old.member_id)
        records.extend(R.member_tombstones(group.group_id, old.member_id))
        group.target[new.member_id] = target
        records.append(R.target_record(group.group_id, new.member_id, target))
        log.info("group %s: static member %s comes back as %s", group.group_id,
                 new.instance_id, new.member_id)

    # -- leaving and fencing --------------------------------------------------------------
    def _consumer_leave(self, r: dict):
        group_id, member_id, epoch = r["group_id"], r["member_id"], r["member_epoch"]
        instance_id = r["instance_id"]
        group = self._consumer_group(group_id, False, [])
        answer = {"error_code": E.NONE, "error_message": None, "member_id": member_id,
                  "member_epoch": epoch, "heartbeat_interval_ms": 0, "assignment": None}
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group_id}.")
        else:
            member = _current_static_member(group.static_member(instance_id), instance_id,
                                            member_id)
            if epoch == STATIC_LEAVE_EPOCH:
                # It will be back: it keeps its partitions until its session expires.
                left = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                self._cancel(member, "rebalance_timer")
                group.add_or_replace(left)
                self._schedule_session_timeout(group, left)
                log.info("group %s: static member %s (%s) left temporarily", group_id,
                         member_id, instance_id)
                return group, [R.current_record(group_id, left)], answer
        log.info("group %s: member %s left", group_id, member_id)
        return group, self._fence(group, member), answer

    def _fence(self, group: ConsumerGroup, member: ConsumerMember) -> list:
        """Remove a member: its records are deleted and the group epoch goes up, so the
        others get its partitions."""
        self._cancel(member, "session_timer")
        self._cancel(member, "rebalance_timer")
        group.remove(member.member_id)
        records = R.member_tombstones(group.group_id, member.member_id)
        meta = self._subscription_metadata(self._topics_of(group.members.values()))
        if meta != group.subscription_metadata:
            group.subscription_metadata = meta
            records.append(R.partition_metadata_record(group.group_id, meta))
        group.group_epoch += 1
        records.append(R.group_epoch_record(group.group_id, group.group_epoch))
        self._count("consumer_rebalances")
        if not group.members:
            group.state_timestamp_ms = self.clock()
        return records

    def _fence_later(self, group: ConsumerGroup, member_id: str, why: str,
                     epoch: int | None = None) -> None:
        if self.groups.get(group.group_id) is not group or group.dead:
            return
        member = group.members.get(member_id)
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return
        log.info("group %s: member %s removed: %s", group.group_id, member_id, why)
        self._count("expirations")
        self._write_then(group, self._fence(group, member), lambda: None, lambda c: None)

    def _schedule_session_timeout(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._cancel(member, "session_timer")
        mid = member.member_id
        timeout = self.config.consumer_session_timeout_ms

        def expire() -> None:
            m = group.members.get(mid)
            if m is None or m.session_timer is not handle:
                return
            m.session_timer = None
            self._fence_later(group, mid, f"no heartbeat within {timeout} ms")
        handle = self.timers.call_later(timeout, expire)
        member.session_timer = handle

    def _schedule_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._cancel(member, "rebalance_timer")
        mid, epoch = member.member_id, member.member_epoch
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else \
            self.config.consumer_session_timeout_ms

        def expire() -> None:
            m = group.members.get(mid)
            if m is None or m.rebalance_timer is not handle:
                return
            m.rebalance_timer = None
            self._fence_later(group, mid, f"did not revoke its partitions within {timeout} ms "
                              f"(epoch {epoch})", epoch=epoch)
        handle = self.timers.call_later(timeout, expire)
        member.rebalance_timer = handle

    # -- target assignment ----------------------------------------------------------------
    def _topics_of(self, members) -> set[str]:
        """The topics members subscribe to: their names and what their regexes match."""
        out: set[str] = set()
        regexes = set()
        for m in members:
            out.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                regexes.add(m.subscribed_topic_regex)
        for regex in regexes:
            out.update(self._matching(regex))
        return out

    def _matching(self, regex: str) -> list[str]:
        """Topics a subscription regex selects: the whole name must match (as Kafka's RE2J
        matches(); topic_regex.py); internal topics are never selected."""
        if self.metadata is None or not hasattr(self.metadata, "names"):
            return []
        try:
            return topic_regex.matching(
                regex, [n for n in self.metadata.names() if not n.startswith("__")])
        except topic_regex.InvalidRegex:
            return []

    def _subscription_metadata(self, names: set[str]) -> dict:
        out = {}
        for name in sorted(names):
            info = self.metadata.topic(name) if self.metadata is not None else None
            if info is not None:
                out[name] = (bytes(info[0]), int(info[1]))
        return out

    def _compute_target(self, group: ConsumerGroup, records: list) -> None:
        meta = group.subscription_metadata
        topics = {tid: n for tid, n in meta.values()}
        members = {mid: {meta[n][0] for n in self._topics_of([m]) if n in meta}
                   for mid, m in group.members.items()}
        name = group.preferred_assignor(self._assignors()[0])
        new = ASSIGNORS[name](members, topics, group.target)
        for mid, a in new.items():
            a = {t: ps for t, ps in a.items() if ps}
            if R.tps(a) != R.tps(group.target.get(mid, {})) or mid not in group.target:
                records.append(R.target_record(group.group_id, mid, a))
            group.target[mid] = a
        for mid in list(group.target):
            if mid not in group.members:
                del group.target[mid]
        group.assignment_epoch = group.group_epoch
        records.append(R.target_epoch_record(group.group_id, group.assignment_epoch))
        log.info("group %s: target assignment for epoch %d by %s", group.group_id,
                 group.group_epoch, name)

    def _write_then(self, group: ConsumerGroup, records: list, ok: Callable[[], None],
                    failed: Callable[[int], None]) -> None:
        """Write the records, then answer (member_records.write_then)."""
        write_then(group, records, ok, failed,
                   write=lambda recs, done: self.store.write(
                       self.partition_of(group.group_id), recs, done),
                   snapshot=lambda removed: R.group_snapshot(group, removed),
                   removed=R.removed_members, gone=group.dead)

    # -- describe -------------------------------------------------------------------------
    def consumer_describe(self, group_id: str) -> dict:
        code = self.group_status(group_id)
        if code:
            return {"error_code": code, "group_id": group_id, "group_state": "",
                    "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                    "members": []}
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or group.dead:
            return {"error_code": E.GROUP_ID_NOT_FOUND, "group_id": group_id,
                    "error_message": f"Group {group_id} not found." if group is None else
                    f"Group {group_id} is not a consumer group.",
                    "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                    "assignor_name": "", "members": []}
        return {"error_code": E.NONE, "group_id": group_id, "group_state": group.state.value,
                "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                "assignor_name": group.preferred_assignor(self._assignors()[0]),
                "members": [{
                    "member_id": m.member_id, "instance_id": m.instance_id,
                    "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": {"topic_partitions": self._named(m.assigned)},
                    "target_assignment": {"topic_partitions": self._named(
                        group.target.get(m.member_id, {}))}}
                    for m in group.members.values()]}

    def _named(self, a: dict) -> list[dict]:
        out = []
        for e in R.tps(a):
            name = self.metadata.name(e["topic_id"]) if self.metadata is not None else None
            out.append({"topic_id": e["topic_id"], "topic_name": name or "",
                        "partitions": e["partitions"]})
        return out

    # -- loading --------------------------------------------------------------------------
    def _consumer_group_from_records(self, gid: str, recs: dict) -> ConsumerGroup | None:
        """recs: what replay kept for one group: 'epoch', 'meta', 'target_epoch', and per
        member 'members' (metadata), 'target', 'current'."""
        if recs.get("epoch") is None:
            return None
        g = ConsumerGroup(gid, group_epoch=recs["epoch"],
                          assignment_epoch=recs.get("target_epoch") or 0,
                          state_timestamp_ms=self.clock())
        for t in recs.get("meta") or []:
            g.subscription_metadata[t["topic_name"]] = (bytes(t["topic_id"]), t["num_partitions"])
        for mid, a in recs.get("target", {}).items():
            g.target[mid] = a
        for mid, v in recs.get("members", {}).items():
            cur = recs.get("current", {}).get(mid)
            m = ConsumerMember(
                mid, instance_id=v["instance_id"], rack_id=v["rack_id"],
                client_id=v["client_id"], client_host=v["client_host"],
                subscribed_topic_names=tuple(sorted(v["subscribed_topic_names"])),
                subscribed_topic_regex=v["subscribed_topic_regex"],
                rebalance_timeout_ms=v["rebalance_timeout_ms"],
                server_assignor=v["server_assignor"])
            if cur is not None:
                m.member_epoch = cur["member_epoch"]
                m.previous_member_epoch = cur["previous_member_epoch"]
                try:
                    m.state = MemberState(cur["state"])
                except ValueError:
                    m.state = MemberState.UNKNOWN
                m.assigned = R.from_tps(cur["assigned_partitions"])
                m.pending_revocation = R.from_tps(cur["partitions_pending_revocation"])
            g.add_or_replace(m)
        for mid in list(g.target):
            if mid not in g.members:
                del g.target[mid]
        return g

    def _start_consumer_group_timers(self, g: ConsumerGroup) -> None:
        """After loading: members that are gone expire after a session timeout; members that
        still had partitions to revoke get their rebalance timeout again."""
        for m in g.members.values():
            self._schedule_session_timeout(g, m)
            if m.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(g, m)

    def _unload_consumer_group(self, g: ConsumerGroup) -> None:
        for m in g.members.values():
            self._cancel(m, "session_timer")
            self._cancel(m, "rebalance_timer")
        g.dead = True


def _current_static_member(existing, instance_id: str, member_id: str):
    """The static member holding instance_id, which must be member_id (a heartbeat or leave
    from an instance another member took over is fenced, as in Kafka)."""
    if existing is None:
        raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise HeartbeatError(E.FENCED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {instance_id} was "
                             f"fenced by member {existing.member_id}.")
    return existing
