"""A KIP-848 consumer group as the coordinator holds it: its epochs, members, target
assignment and who owns which partition now.

Three epochs drive the protocol (Kafka's names):
- the group epoch goes up whenever the group's inputs change: a member joins, leaves or
  changes its subscription or assignor, or the subscribed topics' metadata changes;
- the target assignment epoch is the group epoch the target assignment was computed for;
- each member's epoch says which target assignment it has reconciled to.

The group's state is derived from them: Empty (no members), Assigning (group epoch ahead of
the target assignment), Reconciling (some member not at the target epoch yet), Stable.

Assignments are {topic id (16 bytes): set of partitions}. A partition is owned by a member
while it is in the member's assigned partitions or its partitions pending revocation; a
member is only given a partition once no other member owns it (reconciliation.py).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

Assignment = dict  # {topic id: set[int]}


class MemberState(enum.IntEnum):
    """A member's reconciliation state; the values are the records' (Kafka's MemberState)."""
    STABLE = 0                  # reconciled to its epoch's target
    UNREVOKED_PARTITIONS = 1    # must revoke partitions before it moves to the next epoch
    UNRELEASED_PARTITIONS = 2   # waits for partitions other members still own
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


LEAVE_EPOCH = -1            # a member leaves the group
STATIC_LEAVE_EPOCH = -2     # a static member leaves and will come back (keeps its partitions)


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    # reconciliation
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # timers (not persisted)
    session_timer: object = None
    rebalance_timer: object = None

    def metadata_key(self) -> tuple:
        """What the member-metadata record holds (a change is written)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                tuple(self.subscribed_topic_names), self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor)

    def assignment_key(self) -> tuple:
        """What the current-assignment record holds (a change is written)."""
        return (self.member_epoch, self.previous_member_epoch, int(self.state),
                _frozen(self.assigned), _frozen(self.pending_revocation))

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch


def _frozen(a: Assignment) -> frozenset:
    return frozenset((t, p) for t, ps in a.items() for p in ps)


def copy_assignment(a: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in a.items() if ps}


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)    # member id -> assignment
    # The subscribed topics' metadata the target was computed from:
    # {topic name: (topic id, partition count)}.
    subscription_metadata: dict = field(default_factory=dict)
    # partition owner epochs: (topic id, partition) -> member epoch of its current owner
    partition_epochs: dict = field(default_factory=dict)
    state_timestamp_ms: int = -1
    dead: bool = False
    # Committed offsets, as classic groups keep them (offsets.py works on both kinds).
    offsets: dict = field(default_factory=dict)
    pending_txn: dict = field(default_factory=dict)
    inflight_commits: dict = field(default_factory=dict)
    # Writes of this group's records not yet committed, and answers waiting for them.
    inflight_writes: int = 0
    after_writes: list = field(default_factory=list)      # [(ok, failed)]
    write_failed: int = 0       # error of a write that failed while answers waited
    # Non-empty after a failed write ("" plus the members that write removed): the next
    # write is a snapshot of the whole group (consumer_records.group_snapshot).
    lost_writes: set = field(default_factory=set)

    protocol_type = "consumer"
    group_type = "consumer"

    # -- state ----------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    # -- members --------------------------------------------------------------------------
    def add_or_replace(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._own(member)

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        if member.instance_id is not None and \
                self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        return member

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        mid = self.static_members.get(instance_id)
        return self.members.get(mid) if mid is not None else None

    def _own(self, m: ConsumerMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    self.partition_epochs[(t, p)] = m.member_epoch

    def _release(self, m: ConsumerMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    self.partition_epochs.pop((t, p), None)

    def partition_epoch(self, topic_id: bytes, partition: int) -> int:
        """The epoch of the member owning the partition, -1 if nobody does."""
        return self.partition_epochs.get((topic_id, partition), -1)

    # -- subscriptions --------------------------------------------------------------------
    def subscribed_topics(self, members=None) -> set[str]:
        out: set[str] = set()
        for m in (self.members.values() if members is None else members):
            out.update(m.subscribed_topic_names)
        return out

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: by name), else the default."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(sorted(votes), key=lambda n: votes[n])
