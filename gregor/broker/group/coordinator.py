"""The group coordinator: Kafka's classic rebalance protocol, without any I/O.

Requests come in as calls with a `respond` callback (JoinGroup and SyncGroup answers wait for
the rebalance, so every answer is a callback, even immediate ones). Three ports connect the
coordinator to the broker, so tests drive it with fakes and a fake clock:

- `store.write(partition, records, done, producer=None)`: append [(key, value|None)] to the
  group's partition of `__consumer_offsets` and call `done(error_code, last_offset)` once it is committed
  (acks=all) with the offset of its last record; `producer=(id, epoch)` writes a transactional batch (TxnOffsetCommit);
- `timers.call_later(delay_ms, fn)`: returns a handle with `cancel()`;
- `clock()`: milliseconds.

Committed offsets, their loading and expiry are in offsets.py (OffsetsMixin); describing,
listing and deleting groups in admin.py (GroupAdminMixin); the group and member model in
metadata.py. KIP-848 consumer groups (ConsumerGroupHeartbeat) are in
consumer_coordinator.py (ConsumerGroupsMixin) and live in the same `groups` dict: the classic
calls here answer for them as Kafka does for a group of the other type. Rules follow Kafka's
GroupCoordinator; where a rule is subtle the comment says what the client does with the
answer.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from ...protocol.errors import ErrorCode
from ..txn.coordinator import partition_for
from . import consumer_records
from . import log_records as L
from .admin import GroupAdminMixin
from .consumer_coordinator import ConsumerGroupsMixin
from .consumer_group import ConsumerGroup
from .metadata import Group, GroupState, Member, new_member_id
from .offsets import OffsetsMixin
from .store_errors import STORE_ERRORS

log = logging.getLogger("gregor.broker.group")

E = ErrorCode
S = GroupState
TOPIC = "__consumer_offsets"
PARTITION_CACHE_SIZE = 100_000


@dataclass
class GroupConfig:
    num_partitions: int = 50                    # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000          # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000       # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000      # group.initial.rebalance.delay.ms
    max_size: int = 2 ** 31 - 1                 # group.max.size
    new_member_join_timeout_ms: int = 300000    # Kafka's fixed 5 minutes
    metadata_max_bytes: int = 4096              # offset.metadata.max.bytes
    retention_ms: int = 7 * 24 * 3600 * 1000    # offsets.retention.minutes
    # KIP-848 consumer groups (Kafka's group.consumer.* settings)
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    consumer_session_timeout_ms: int = 45000    # group.consumer.session.timeout.ms
    consumer_max_size: int = 2 ** 31 - 1        # group.consumer.max.size
    consumer_assignors: tuple = ("uniform", "range")    # group.consumer.assignors (1st: default)


def join_error(member_id: str, code: int) -> dict:
    return {"error_code": code, "member_id": member_id, "generation_id": -1,
            "protocol_type": None, "protocol_name": None, "leader": "", "members": []}


class GroupCoordinator(OffsetsMixin, ConsumerGroupsMixin, GroupAdminMixin):
    def __init__(self, config: GroupConfig, store, timers, clock: Callable[[], int],
                 metrics=None, metadata=None):
        self.config = config
        self.metadata = metadata      # topic(name) -> (id, partitions) | None; name(id)
        self.store = store
        self.timers = timers
        self.clock = clock
        self.metrics = metrics
        self.groups: dict[str, Group] = {}
        self.partitions: dict[int, str] = {}      # owned partition -> "loading" | "loaded"
        self._partition_cache: dict[str, int] = {}
        # the share groups' membership (share/membership.py): load(partition, records by
        # group) when a partition is loaded, unload(partition) when it is given up
        self.share_groups = None

    # -- ownership ------------------------------------------------------------------------
    def partition_of(self, group_id: str) -> int:
        # Java's String.hashCode is a Python loop over the id (~2 us for 20 characters) and
        # every group request asks for it: remember it, in a dict cleared when it grows past
        # PARTITION_CACHE_SIZE ids (ids come from clients).
        p = self._partition_cache.get(group_id)
        if p is None:
            if len(self._partition_cache) >= PARTITION_CACHE_SIZE:
                self._partition_cache.clear()
            p = self._partition_cache[group_id] = partition_for(group_id,
                                                                self.config.num_partitions)
        return p

    def group_status(self, group_id: str | None) -> int:
        """Whether requests for this group can be served here now (Kafka's validateGroupStatus)."""
        if not group_id:
            return E.INVALID_GROUP_ID
        state = self.partitions.get(self.partition_of(group_id))
        if state is None:
            return E.NOT_COORDINATOR
        if state == "loading":
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return E.NONE

    def _new_group(self, group_id: str) -> Group:
        g = Group(group_id, state_timestamp_ms=self.clock())
        self.groups[group_id] = g
        return g

    def _count(self, what: str) -> None:
        if self.metrics is not None:
            self.metrics.count(what)

    # -- JoinGroup ------------------------------------------------------------------------
    def join(self, group_id: str, member_id: str, instance_id: str | None, protocol_type: str,
             protocols: list[tuple[str, bytes]], session_timeout_ms: int,
             rebalance_timeout_ms: int, client_id: str, client_host: str,
             require_known_member_id: bool, respond: Callable[[dict], None]) -> None:
        code = self.group_status(group_id)
        if code:
            return respond(join_error(member_id, code))
        if not (self.config.min_session_timeout_ms <= session_timeout_ms
                <= self.config.max_session_timeout_ms):
            return respond(join_error(member_id, E.INVALID_SESSION_TIMEOUT))
        unknown = member_id == ""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            if group.members:
                # Classic members joining a consumer group (migration) are not served.
                return respond(join_error(member_id, E.INCONSISTENT_GROUP_PROTOCOL))
            if not unknown:
                return respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))
            # An empty consumer group becomes a classic one, keeping its offsets.
            self.store.write(self.partition_of(group_id),
                             consumer_records.group_tombstones(group), lambda c, _o=-1: None)
            self._unload_consumer_group(group)
            old = group
            group = self._new_group(group_id)
            group.offsets, group.pending_txn = old.offsets, old.pending_txn
            group.inflight_commits = old.inflight_commits
        if group is None:
            if not unknown:
                return respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))
            group = self._new_group(group_id)
        if not self._accepts_joining(group, member_id):
            return respond(join_error("", E.GROUP_MAX_SIZE_REACHED))
        if group.is_(S.DEAD):
            # Removed under our feet (deleted, or its partition moved): find the coordinator again.
            return respond(join_error(member_id, E.COORDINATOR_NOT_AVAILABLE))
        if not group.supports(protocol_type, protocols):
            return respond(join_error(member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        args = (rebalance_timeout_ms, session_timeout_ms, client_id, client_host, protocol_type,
                protocols)
        if unknown:
            new_id = new_member_id(client_id, instance_id)
            if instance_id is not None:
                self._static_new_member_join(group, instance_id, new_id, args, respond)
            elif require_known_member_id:
                # JoinGroup v4+: hand out the id first; the member joins again with it.
                group.pending_members.add(new_id)
                self._schedule_pending_expiry(group, new_id, session_timeout_ms)
                respond(join_error(new_id, E.MEMBER_ID_REQUIRED))
            else:
                self._add_member_and_rebalance(group, new_id, None, args, respond)
        else:
            self._current_member_join(group, member_id, instance_id, args, respond)
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _accepts_joining(self, group: Group, member_id: str) -> bool:
        # Members already in (or promised an id) may always rejoin; new ones while there is room.
        if group.has(member_id) or member_id in group.pending_members:
            return True
        return len(group.members) + len(group.pending_members) < self.config.max_size

    def _current_member_join(self, group: Group, member_id: str, instance_id: str | None,
                             args: tuple, respond) -> None:
        if member_id in group.pending_members:
            if instance_id is not None:
                return respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))
            return self._add_member_and_rebalance(group, member_id, None, args, respond)
        if group.static_fenced(member_id, instance_id):
            return respond(join_error(member_id, E.FENCED_INSTANCE_ID))
        if instance_id is not None and instance_id not in group.static_members:
            return respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))
        if not group.has(member_id):
            return respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))
        member = group.members[member_id]
        protocols = args[5]
        if group.is_(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, args, respond)
        elif group.is_(S.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # It missed the JoinGroup answer: answer again for the current generation.
                respond(self._join_result(group, member, leader_view=True))
            else:
                self._update_member_and_rebalance(group, member, args, respond)
        elif group.is_(S.STABLE):
            if group.leader_id == member_id or not member.matches(protocols):
                # A rejoining leader forces a rebalance (it may have seen new partitions).
                self._update_member_and_rebalance(group, member, args, respond)
            else:
                respond(self._join_result(group, member, leader_view=False))
        else:
            respond(join_error(member_id, E.UNKNOWN_MEMBER_ID))

    def _static_new_member_join(self, group: Group, instance_id: str, new_id: str, args: tuple,
                                respond) -> None:
        old_id = group.static_members.get(instance_id)
        if old_id is None:
            return self._add_member_and_rebalance(group, new_id, instance_id, args, respond)
        # A restarted static member: it takes over its old identity, fencing the old instance.
        rebalance_timeout, session_timeout, _cid, _host, _ptype, protocols = args
        member = group.members[old_id]
        if member.join_callback is not None:
            cb, member.join_callback = member.join_callback, None
            cb(join_error(old_id, E.FENCED_INSTANCE_ID))
        if member.sync_callback is not None:
            cb, member.sync_callback = member.sync_callback, None
            cb({"error_code": E.FENCED_INSTANCE_ID, "assignment": b""})
        self._cancel(member, "heartbeat_timer")
        old_protocols = member.protocols
        group.replace_static(instance_id, old_id, new_id)
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout
        member.session_timeout_ms = session_timeout
        if group.is_(S.STABLE):
            selected = group.protocol_name
            if dict(protocols).get(selected) == dict(old_protocols).get(selected) is not None:
                # Same subscription: no rebalance; persist the new member id, then answer
                # with the current generation so it syncs and gets its old assignment.
                self._schedule_heartbeat(group, member)

                def stored(code: int, _offset: int = -1) -> None:
                    if code:
                        # Undo: the old id stays the instance's (its client will be fenced).
                        respond(join_error(new_id, STORE_ERRORS.get(code,
                                                                    E.UNKNOWN_SERVER_ERROR)))
                        return
                    respond(self._join_result(group, member, leader_view=False))
                self._store_group(group, stored)
            else:
                member.join_callback = respond
                self._prepare_rebalance(group, f"static member {instance_id} changed metadata")
        elif group.is_(S.COMPLETING_REBALANCE):
            member.join_callback = respond
            self._prepare_rebalance(group, f"static member {instance_id} rejoined")
        elif group.is_(S.PREPARING_REBALANCE):
            member.join_callback = respond
        else:
            respond(join_error(new_id, E.UNKNOWN_MEMBER_ID))

    def _add_member_and_rebalance(self, group: Group, member_id: str, instance_id: str | None,
                                  args: tuple, respond) -> None:
        rebalance_timeout, session_timeout, client_id, client_host, ptype, protocols = args
        member = Member(member_id, instance_id, client_id, client_host, rebalance_timeout,
                        session_timeout, ptype, list(protocols), join_callback=respond,
                        is_new=True)
        group.add(member)
        if group.is_(S.PREPARING_REBALANCE) and group.initial_join:
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")
        # A new member that never completes its join is dropped after Kafka's 5 minutes.
        self._schedule_heartbeat(group, member)

    def _update_member_and_rebalance(self, group: Group, member: Member, args: tuple,
                                     respond) -> None:
        rebalance_timeout, session_timeout, _cid, _host, _ptype, protocols = args
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout
        member.session_timeout_ms = session_timeout
        member.join_callback = respond
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _join_result(self, group: Group, member: Member, leader_view: bool) -> dict:
        leader = group.leader_id == member.member_id
        return {"error_code": E.NONE, "member_id": member.member_id,
                "generation_id": group.generation, "protocol_type": group.protocol_type,
                "protocol_name": group.protocol_name, "leader": group.leader_id or "",
                "members": group.member_metadata() if leader and leader_view else []}

    # -- rebalance ------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self._propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
        self._cancel(group, "sync_timer")
        self._cancel(group, "join_timer")
        group.initial_join = False
        was_empty = group.is_(S.EMPTY)
        group.transition(S.PREPARING_REBALANCE, self.clock())
        self._count("rebalances")
        log.info("group %s: preparing to rebalance (generation %d): %s", group.group_id,
                 group.generation, reason)
        delay = self.config.initial_rebalance_delay_ms
        if was_empty and delay > 0:
            # Kafka's initial delay: let more members arrive before the first generation.
            remaining = max(0, group.max_rebalance_timeout_ms() - delay)
            group.new_member_added = False
            self._schedule_initial_join(group, delay, remaining)
        else:
            group.join_timer = self.timers.call_later(
                group.max_rebalance_timeout_ms(), lambda: self._join_deadline(group))
            self._try_complete_join(group)      # e.g. the last member left: nobody to wait for

    def _schedule_initial_join(self, group: Group, delay: int, remaining: int) -> None:
        def fire() -> None:
            if group.join_timer is not handle or not group.is_(S.PREPARING_REBALANCE):
                return
            if group.new_member_added and remaining > 0:
                group.new_member_added = False
                step = min(delay, remaining)
                self._schedule_initial_join(group, step, remaining - step)
            else:
                group.join_timer = None
                group.initial_join = False
                self._complete_join(group)
        handle = self.timers.call_later(delay, fire)
        group.join_timer = handle
        group.initial_join = True

    def _join_deadline(self, group: Group) -> None:
        if group.is_(S.PREPARING_REBALANCE):
            group.join_timer = None
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if group.initial_join:
            return
        if group.is_(S.PREPARING_REBALANCE) and group.all_joined():
            self._cancel(group, "join_timer")
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        now = self.clock()
        # Dynamic members that did not rejoin in time are dropped; static ones keep their place.
        for m in group.not_yet_rejoined():
            if m.instance_id is None:
                self._cancel(m, "heartbeat_timer")
                group.remove(m.member_id)
        if group.is_(S.DEAD):
            return
        if group.members and not group.elect_joined_leader():
            # Only static members that have not rejoined: wait another rebalance timeout.
            group.join_timer = self.timers.call_later(
                group.max_rebalance_timeout_ms(), lambda: self._join_deadline(group))
            return
        group.init_next_generation(now)
        if group.is_(S.EMPTY):
            log.info("group %s is empty at generation %d", group.group_id, group.generation)
            self._store_group(group, lambda code, _offset=-1: None)
            return
        log.info("group %s: generation %d with %d member(s), protocol %s, leader %s",
                 group.group_id, group.generation, len(group.members), group.protocol_name,
                 group.leader_id)
        for m in list(group.members.values()):
            cb, m.join_callback = m.join_callback, None
            m.is_new = False
            group.pending_sync.add(m.member_id)
            self._schedule_heartbeat(group, m)
            if cb is not None:
                cb(self._join_result(group, m, leader_view=True))
        generation = group.generation
        group.sync_timer = self.timers.call_later(
            group.max_rebalance_timeout_ms(), lambda: self._sync_deadline(group, generation))

    def _sync_deadline(self, group: Group, generation: int) -> None:
        """Members that joined but never synced within the rebalance timeout are removed."""
        group.sync_timer = None
        if group.generation != generation or not group.pending_sync or \
                group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
            return
        for member_id in list(group.pending_sync):
            m = group.members.get(member_id)
            if m is not None:
                self._cancel(m, "heartbeat_timer")
                group.remove(member_id)
        group.pending_sync.clear()
        self._prepare_rebalance(group, "members did not sync in time")

    def _propagate_assignment_error(self, group: Group, code: int) -> None:
        for m in group.members.values():
            m.assignment = b""
            if m.sync_callback is not None:
                cb, m.sync_callback = m.sync_callback, None
                cb({"error_code": code, "assignment": b""})

    # -- SyncGroup ------------------------------------------------------------------------
    def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None,
             assignments: dict[str, bytes], respond: Callable[[dict], None]) -> None:
        def fail(code: int) -> None:
            respond({"error_code": code, "assignment": b"", "protocol_type": None,
                     "protocol_name": None})
        code = self.group_status(group_id)
        if code == E.COORDINATOR_LOAD_IN_PROGRESS:
            return fail(E.REBALANCE_IN_PROGRESS)    # the rebalance was lost: join again
        if code:
            return fail(code)
        group = self.groups.get(group_id)
        if group is None or isinstance(group, ConsumerGroup):
            return fail(E.UNKNOWN_MEMBER_ID)
        if group.is_(S.DEAD):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        if group.static_fenced(member_id, instance_id):
            return fail(E.FENCED_INSTANCE_ID)
        if not group.has(member_id):
            return fail(E.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            return fail(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]

        def answer(result: dict) -> None:
            result.setdefault("protocol_type", group.protocol_type)
            result.setdefault("protocol_name", group.protocol_name)
            respond(result)
        if group.is_(S.EMPTY):
            return fail(E.UNKNOWN_MEMBER_ID)
        if group.is_(S.PREPARING_REBALANCE):
            return fail(E.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member_id)
        if group.is_(S.STABLE):
            self._schedule_heartbeat(group, member)
            return answer({"error_code": E.NONE, "assignment": member.assignment})
        # CompletingRebalance: wait for the leader's assignment.
        member.sync_callback = answer
        self._schedule_heartbeat(group, member)
        if member_id != group.leader_id:
            return
        gen = group.generation
        full = {m: assignments.get(m, b"") for m in group.members}

        def stored(code: int, _offset: int = -1) -> None:
            if group.generation != gen or not group.is_(S.COMPLETING_REBALANCE):
                return
            if code:
                self._propagate_assignment_error(group, STORE_ERRORS.get(
                    code, E.UNKNOWN_SERVER_ERROR))
                self._maybe_prepare_rebalance(group, "storing the assignment failed")
                return
            for mid, m in group.members.items():
                m.assignment = full[mid]
            group.transition(S.STABLE, self.clock())
            for m in group.members.values():
                if m.sync_callback is not None:
                    cb, m.sync_callback = m.sync_callback, None
                    cb({"error_code": E.NONE, "assignment": m.assignment})
            log.info("group %s stable at generation %d", group.group_id, gen)
        self._store_group(group, stored, assignments=full)

    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(self, group_id: str, generation: int, member_id: str,
                  instance_id: str | None) -> int:
        code = self.group_status(group_id)
        if code == E.COORDINATOR_LOAD_IN_PROGRESS:
            return E.NONE       # Kafka: the member keeps going until loading completes
        if code:
            return code
        group = self.groups.get(group_id)
        if group is None or isinstance(group, ConsumerGroup):
            return E.UNKNOWN_MEMBER_ID
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.static_fenced(member_id, instance_id):
            return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        if group.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.members[member_id])
        if group.is_(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # -- LeaveGroup -----------------------------------------------------------------------
    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list]:
        """(top-level error, [(member_id, instance_id, error)])."""
        code = self.group_status(group_id)
        if code:
            return code, []
        group = self.groups.get(group_id)
        if group is None or isinstance(group, ConsumerGroup):
            return E.NONE, [(m, i, E.UNKNOWN_MEMBER_ID) for m, i in members]
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in members:
            if instance_id is not None:
                current = group.static_members.get(instance_id)
                if current is None:
                    results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
                    continue
                if member_id and member_id != current:
                    results.append((member_id, instance_id, E.FENCED_INSTANCE_ID))
                    continue
                member_id = current
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                if group.is_(S.PREPARING_REBALANCE):
                    self._try_complete_join(group)
                results.append((member_id, instance_id, E.NONE))
            elif not group.has(member_id):
                results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
            else:
                self._remove_member_and_update(group, group.members[member_id], "left")
                results.append((member_id, instance_id, E.NONE))
        return E.NONE, results

    def _remove_member_and_update(self, group: Group, member: Member, reason: str) -> None:
        if member.join_callback is not None:
            cb, member.join_callback = member.join_callback, None
            cb(join_error(member.member_id, E.UNKNOWN_MEMBER_ID))
        if member.sync_callback is not None:
            cb, member.sync_callback = member.sync_callback, None
            cb({"error_code": E.UNKNOWN_MEMBER_ID, "assignment": b""})
        self._cancel(member, "heartbeat_timer")
        group.remove(member.member_id)
        log.info("group %s: member %s %s", group.group_id, member.member_id, reason)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} {reason}")
        elif group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- session timeouts -----------------------------------------------------------------
    def _schedule_heartbeat(self, group: Group, member: Member) -> None:
        self._cancel(member, "heartbeat_timer")
        timeout = self.config.new_member_join_timeout_ms if member.is_new and \
            member.awaiting_join else member.session_timeout_ms

        def expire() -> None:
            if member.heartbeat_timer is not handle:
                return
            member.heartbeat_timer = None
            if group.members.get(member.member_id) is not member:
                return
            if (member.awaiting_join and not member.is_new) or member.sync_callback is not None:
                # Waiting in a JoinGroup or SyncGroup counts as alive (the rebalance and sync
                # deadlines remove members that never get there).
                self._schedule_heartbeat(group, member)
                return
            self._count("expirations")
            self._remove_member_and_update(group, member, "expired (no heartbeat within "
                                           f"{member.session_timeout_ms} ms)")
        handle = self.timers.call_later(timeout, expire)
        member.heartbeat_timer = handle

    def _schedule_pending_expiry(self, group: Group, member_id: str, timeout_ms: int) -> None:
        def expire() -> None:
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                if group.is_(S.PREPARING_REBALANCE):
                    self._try_complete_join(group)
        self.timers.call_later(timeout_ms, expire)

    @staticmethod
    def _cancel(obj, attr: str) -> None:
        handle = getattr(obj, attr)
        if handle is not None:
            handle.cancel()
            setattr(obj, attr, None)

    # -- persistence of the group ---------------------------------------------------------
    def _store_group(self, group: Group, done: Callable[[int], None],
                     assignments: dict[str, bytes] | None = None) -> None:
        members = [L.MemberValue(m.member_id, m.instance_id, m.client_id, m.client_host,
                                 m.rebalance_timeout_ms, m.session_timeout_ms,
                                 m.metadata(group.protocol_name) if group.protocol_name else b"",
                                 (assignments or {}).get(m.member_id, m.assignment))
                   for m in group.members.values()]
        value = L.GroupValue(group.protocol_type or "", group.generation, group.protocol_name,
                             group.leader_id, group.state_timestamp_ms, members)
        self.store.write(self.partition_of(group.group_id),
                         [(L.encode_group_key(group.group_id), L.encode_group_value(value))],
                         done)

    # -- loading --------------------------------------------------------------------------
    def unload_partition(self, partition: int) -> None:
        self.partitions.pop(partition, None)
        if self.share_groups is not None:
            self.share_groups.unload(partition)
        for gid, g in list(self.groups.items()):
            if self.partition_of(gid) != partition:
                continue
            if isinstance(g, ConsumerGroup):
                self._unload_consumer_group(g)
                del self.groups[gid]
                continue
            for m in list(g.members.values()):
                self._cancel(m, "heartbeat_timer")
                if m.join_callback is not None:
                    m.join_callback(join_error(m.member_id, E.NOT_COORDINATOR))
                if m.sync_callback is not None:
                    m.sync_callback({"error_code": E.NOT_COORDINATOR, "assignment": b""})
            self._cancel(g, "join_timer")
            self._cancel(g, "sync_timer")
            g.state = S.DEAD
            del self.groups[gid]

    def close(self) -> None:
        for n in list(self.partitions):
            self.unload_partition(n)
