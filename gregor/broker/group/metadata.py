"""One consumer group as the coordinator holds it: its state, members and generation.

The states and their moves are Kafka's (GroupMetadata's validPreviousStates):

    Empty --join--> PreparingRebalance --all joined--> CompletingRebalance --leader's sync--> Stable
    Stable / CompletingRebalance --join, leave, expiry--> PreparingRebalance
    PreparingRebalance --nobody left--> Empty;   Empty / any --deleted or unloaded--> Dead
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Callable


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
_VALID_PREVIOUS = {
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.EMPTY: {S.PREPARING_REBALANCE},
}


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]          # in the member's order of preference
    assignment: bytes = b""
    join_callback: Callable | None = None       # a JoinGroup waiting for the rebalance
    sync_callback: Callable | None = None       # a SyncGroup waiting for the leader
    is_new: bool = False
    heartbeat_timer: object = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)


@dataclass
class Group:
    group_id: str
    state: GroupState = S.EMPTY
    state_timestamp_ms: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)     # instance id -> member id
    pending_members: set[str] = field(default_factory=set)           # MEMBER_ID_REQUIRED sent
    pending_sync: set[str] = field(default_factory=set)              # joined, not yet synced
    join_timer: object = None
    initial_join: bool = False                  # join_timer is the initial rebalance delay
    sync_timer: object = None
    new_member_added: bool = False
    # Committed offsets (offsets.py): (topic, partition) -> Committed, and a transaction's
    # offsets pending its marker: producer id -> (topic, partition) -> Committed.
    offsets: dict = field(default_factory=dict)
    pending_txn: dict = field(default_factory=dict)
    inflight_commits: dict = field(default_factory=dict)     # (topic, partition) -> writes
    # Created by an offset commit whose record is not committed in the log yet (offsets.py).
    unwritten: bool = False

    # -- state ----------------------------------------------------------------------------
    @property
    def pending_creation(self) -> bool:
        """Known only from a commit still being written, and no member since: ListGroups and
        DescribeGroups do not show it yet. Kafka's coordinator answers them from the state
        at the last committed offset, so a group appears together with its first offsets;
        showing it earlier would show a group without them (a lag tool reads 0 lag)."""
        return self.unwritten and not self.members

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, to: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[to]:
            raise AssertionError(f"group {self.group_id}: illegal move {self.state.value} -> "
                                 f"{to.value}")
        self.state = to
        self.state_timestamp_ms = now_ms

    # -- members --------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and \
                self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def static_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A request from an older incarnation of a static member."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick one that did; False if none rejoined."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.awaiting_join:
            return True
        for m in self.members.values():
            if m.awaiting_join:
                self.leader_id = m.member_id
                return True
        return False

    # -- protocols ------------------------------------------------------------------------
    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """An empty group takes any protocols; otherwise the type must match and at least one
        protocol be supported by every member."""
        names = {n for n, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidates())

    def candidates(self) -> set[str]:
        common: set[str] | None = None
        for m in self.members.values():
            names = {n for n, _ in m.protocols}
            common = names if common is None else common & names
        return common or set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol among the common ones; the most
        voted wins (ties: the first in the first member's order)."""
        candidates = self.candidates()
        if not candidates:
            raise AssertionError(f"group {self.group_id} has no common protocol")
        votes: dict[str, int] = {}
        for m in self.members.values():
            vote = next(n for n, _ in m.protocols if n in candidates)
            votes[vote] = votes.get(vote, 0) + 1
        first = next(iter(self.members.values()))
        order = [n for n, _ in first.protocols if n in candidates]
        return max(order, key=lambda n: (votes.get(n, 0), -order.index(n)))

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(S.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(S.EMPTY, now_ms)
        self.pending_sync = set()

    def member_metadata(self) -> list[dict]:
        """The JoinGroup response's member list for the leader."""
        return [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                 "metadata": m.metadata(self.protocol_name)} for m in self.members.values()]

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, from consumer-protocol metadata; None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        from .consumer_protocol import subscription_topics
        topics: set[str] = set()
        for m in self.members.values():
            got = subscription_topics(m.metadata(self.protocol_name))
            if got is None:
                return None
            topics |= got
        return topics


def new_member_id(client_id: str, instance_id: str | None) -> str:
    return f"{instance_id or client_id}-{uuid.uuid4()}"
