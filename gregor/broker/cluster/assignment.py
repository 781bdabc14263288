"""Replica placement and leader choice, pure functions (no ZooKeeper, no clock).

`assign_replicas` is Kafka's rack-unaware round robin (AdminUtils): the first replica of
partition p goes to broker (p + start) mod n; the others follow at a shift that grows by one
every n partitions, so leaders and followers both spread evenly. Kafka picks start and shift at
random; they are parameters here so tests can compare with Kafka's documented layout.
"""
from __future__ import annotations

import random

from .znodes import PartitionState


class AssignmentError(ValueError):
    pass


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int, *,
                    start_index: int = -1, start_partition: int = 0,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    ids = sorted(brokers)
    n = len(ids)
    if partitions <= 0:
        raise AssignmentError("number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise AssignmentError("replication factor must be larger than 0")
    if replication_factor > n:
        raise AssignmentError(f"replication factor: {replication_factor} larger than available "
                              f"brokers: {n}")
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    current = max(0, start_partition)
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[(first + 1 + (shift + j) % (n - 1)) % n])
        out[current] = replicas
        current += 1
    return out


def initial_state(replicas: list[int], live: set[int], controller_epoch: int) -> PartitionState:
    """A new partition: leader = first live replica, ISR = live replicas, epoch 0 (Kafka's
    NewPartition -> OnlinePartition). No live replica: leader -1 (offline)."""
    isr = [b for b in replicas if b in live]
    return PartitionState(isr[0] if isr else -1, 0, isr, controller_epoch)


def elect_after_change(replicas: list[int], state: PartitionState, live: set[int],
                       controller_epoch: int, unclean: bool = False) -> PartitionState | None:
    """The state a partition moves to when brokers come or go, or None to leave it.

    Kafka's offline-partition election with unclean election off: dead brokers leave the ISR;
    a dead leader is replaced by the first live ISR member in replica order; when no ISR member
    is alive the partition goes offline (leader -1) keeping its last ISR member, so only that
    replica can bring it back. Every change bumps the leader epoch, as Kafka's controller does
    when it removes a dead replica from the ISR (brokers then ignore older LeaderAndIsr).
    With unclean (unclean.leader.election.enable) a partition whose ISR is all dead takes
    the first live replica instead of going offline: available again, at the price of the
    acknowledged records only the dead ISR had.
    """
    isr_live = [b for b in state.isr if b in live]
    if state.leader in live:
        if isr_live == state.isr:
            return None
        return PartitionState(state.leader, state.leader_epoch + 1, isr_live, controller_epoch)
    candidates = [b for b in replicas if b in isr_live]
    if candidates:
        return PartitionState(candidates[0], state.leader_epoch + 1, isr_live, controller_epoch)
    if unclean:
        out_of_sync = [b for b in replicas if b in live]
        if out_of_sync:
            return PartitionState(out_of_sync[0], state.leader_epoch + 1, out_of_sync[:1],
                                  controller_epoch)
    if state.leader == -1:
        return None                      # already offline; waits for an ISR member to return
    last = [state.leader] if state.leader in state.isr else state.isr[:1]
    return PartitionState(-1, state.leader_epoch + 1, last, controller_epoch)


def bounced_brokers(known: dict[int, int], current: dict[int, int]) -> set[int]:
    """Brokers live at both reads whose registration is newer now (Kafka's bouncedBrokerIds,
    KAFKA-7235): the broker epoch is the czxid of /brokers/ids/<id>, so a broker that lost its
    session and registered again between two reads of the controller has a larger one, even
    though the set of ids did not change."""
    return {b for b, epoch in current.items() if b in known and epoch > known[b]}


def elect_after_bounce(replicas: list[int], state: PartitionState, live: set[int],
                       bounced: set[int], controller_epoch: int,
                       unclean: bool = False) -> PartitionState | None:
    """As elect_after_change, with every bounced broker handled as Kafka's controller does:
    first as a failure (its leaderships move to another live ISR member, it leaves the ISRs),
    then as a startup (a partition that went offline with it comes back with it as leader).
    Its old registration's state cannot be trusted: it may have restarted on a shorter log.
    Unclean election is left to the startup step: the broker is back, so a partition it alone
    held in sync waits for it rather than take an out-of-sync replica (Kafka's failure step
    could elect one here)."""
    after_failure = state
    if bounced & (set(state.isr) | {state.leader}):
        after_failure = elect_after_change(replicas, state, live - bounced,
                                           controller_epoch) or state
    after_startup = elect_after_change(replicas, after_failure, live, controller_epoch,
                                       unclean)
    if after_startup is not None:
        return after_startup
    return after_failure if after_failure is not state else None
