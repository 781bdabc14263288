"""Reconciling one member's current assignment towards its target (Kafka's rules for the
consumer protocol).

A member moves to a new target assignment in steps, so that no partition is ever owned by
two members at once:

1. partitions it has that are no longer in its target are revoked first: the member stays
   at its epoch in UNREVOKED_PARTITIONS (keeping the partitions it may keep) until a
   heartbeat shows it no longer owns them;
2. then it gets the target's partitions that no other member owns (pending revocation
   included) and moves to the target epoch; if some are still owned elsewhere it waits for
   them in UNRELEASED_PARTITIONS, and gets them on a later heartbeat once released.

`owned` is what the member reported in this heartbeat: None when it did not say (unchanged
since its last heartbeat), a list of (topic id, partitions) otherwise.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .consumer_group import Assignment, ConsumerMember, MemberState


class FencedMember(Exception):
    """The member's state is unknown: it must give up its partitions and rejoin."""


def owns_any(owned, revoking: Assignment) -> bool:
    if owned is None:
        return True         # not reported: assume it still holds them
    for topic_id, partitions in owned:
        pending = revoking.get(topic_id)
        if pending and any(p in pending for p in partitions):
            return True
    return False


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[bytes, int], int], owned) -> ConsumerMember:
    """The member after this heartbeat (a new object when anything changed)."""
    s = member.state
    if s is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if s is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch,
                     owned)
    if s is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN
    if owned is None or owned:
        raise FencedMember("the member is in an unknown state; it must abandon its "
                           "partitions and rejoin")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: Assignment,
          partition_epoch, owned) -> ConsumerMember:
    assigned: Assignment = {}
    revoking: Assignment = {}
    pending: Assignment = {}
    unreleased = False
    for t in set(target) | set(member.assigned):
        want = target.get(t, set())
        have = member.assigned.get(t, set())
        keep = have & want
        drop = have - keep
        add = {p for p in want - keep if partition_epoch(t, p) == -1}
        if len(add) < len(want - keep):
            unreleased = True
        if keep:
            assigned[t] = keep
        if drop:
            revoking[t] = drop
        if add:
            pending[t] = add
    if revoking and owns_any(owned, revoking):
        return _with(member, MemberState.UNREVOKED_PARTITIONS, epoch, assigned, revoking)
    for t, ps in pending.items():
        assigned.setdefault(t, set()).update(ps)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with(member, state, target_epoch, assigned, {})


def _with(member: ConsumerMember, state: MemberState, epoch: int, assigned: Assignment,
          revoking: Assignment) -> ConsumerMember:
    previous = member.member_epoch if epoch != member.member_epoch else \
        member.previous_member_epoch
    return replace(member, state=state, member_epoch=epoch, previous_member_epoch=previous,
                   assigned=assigned, pending_revocation=revoking)
