"""Replica assignment (Kafka's rack-unaware round robin) and leader election rules."""
from __future__ import annotations

import random

import pytest

from gregor.broker.cluster.assignment import (AssignmentError, assign_replicas,
                                              bounced_brokers, elect_after_bounce,
                                              elect_after_change, initial_state)
from gregor.broker.cluster.znodes import PartitionState


def test_matches_kafkas_documented_layout():
    # AdminUtils' example: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_brokers_are_sorted_and_ids_need_not_be_dense():
    assert assign_replicas([30, 10, 20], 3, 2, start_index=0) == {
        0: [10, 20], 1: [20, 30], 2: [30, 10]}


@pytest.mark.parametrize("seed", range(20))
def test_random_start_spreads_leaders_and_never_repeats_a_broker(seed):
    brokers = [1, 2, 3, 4]
    got = assign_replicas(brokers, 8, 3, rng=random.Random(seed))
    assert sorted(got) == list(range(8))
    for replicas in got.values():
        assert len(set(replicas)) == 3 and set(replicas) <= set(brokers)
    leaders = [r[0] for r in got.values()]
    assert all(leaders.count(b) == 2 for b in brokers)


def test_invalid_requests():
    with pytest.raises(AssignmentError, match="larger than available brokers: 2"):
        assign_replicas([0, 1], 1, 3)
    with pytest.raises(AssignmentError):
        assign_replicas([0, 1], 0, 1)


def test_initial_state_leader_is_first_live_replica():
    s = initial_state([2, 0, 1], {0, 1}, 4)
    assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch) == (0, 0, [0, 1], 4)
    assert initial_state([5], {0}, 1).leader == -1


def st(leader, epoch, isr):
    return PartitionState(leader, epoch, isr, 1)


def test_dead_leader_replaced_by_first_live_isr_member_in_replica_order():
    new = elect_after_change([1, 2, 3], st(1, 4, [3, 2, 1]), {2, 3}, 2)
    assert (new.leader, new.leader_epoch, new.isr, new.controller_epoch) == (2, 5, [3, 2], 2)


def test_dead_follower_leaves_isr_and_bumps_epoch():
    new = elect_after_change([1, 2, 3], st(1, 0, [1, 2, 3]), {1, 2}, 1)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 1, [1, 2])
    assert elect_after_change([1, 2, 3], st(1, 0, [1, 2, 3]), {1, 2, 3}, 1) is None


def test_no_unclean_election_and_return_of_the_last_isr_member():
    # Only a replica outside the ISR survives: offline, last ISR member kept.
    off = elect_after_change([1, 2, 3], st(1, 3, [1]), {2, 3}, 1)
    assert (off.leader, off.leader_epoch, off.isr) == (-1, 4, [1])
    assert elect_after_change([1, 2, 3], off, {2, 3}, 1) is None
    back = elect_after_change([1, 2, 3], off, {1, 2}, 1)
    assert (back.leader, back.leader_epoch, back.isr) == (1, 5, [1])


def test_unclean_election_takes_a_live_out_of_sync_replica_only_when_enabled():
    offline_isr = st(1, 3, [1])                 # only broker 1 was in sync; it is dead
    assert elect_after_change([1, 2, 3], offline_isr, {2, 3}, 1).leader == -1
    new = elect_after_change([1, 2, 3], offline_isr, {2, 3}, 1, unclean=True)
    assert (new.leader, new.isr, new.leader_epoch) == (2, [2], 4)
    # with a live in-sync replica the setting changes nothing
    assert elect_after_change([1, 2, 3], st(1, 3, [1, 3]), {2, 3}, 1, unclean=True).leader == 3


def test_a_bounce_is_a_newer_registration_of_an_id_live_at_both_reads():
    # Kafka's bouncedBrokerIds: same id, larger czxid; new and dead ids are not bounces
    assert bounced_brokers({1: 10, 2: 20, 3: 30}, {1: 10, 2: 25, 4: 40}) == {2}
    assert bounced_brokers({1: 10}, {1: 10}) == set()


def test_a_bounced_leader_is_failed_over_then_started_as_a_follower():
    # failure step: leadership to the next ISR member, the bounced broker leaves the ISR;
    # startup step: nothing more (it rejoins the ISR by fetching, through AlterPartition)
    new = elect_after_bounce([1, 2, 3], st(1, 4, [1, 2, 3]), {1, 2, 3}, {1}, 2)
    assert (new.leader, new.leader_epoch, new.isr) == (2, 5, [2, 3])
    # a bounced follower leaves the ISR, the leader stays
    new = elect_after_bounce([1, 2, 3], st(1, 4, [1, 2, 3]), {1, 2, 3}, {3}, 2)
    assert (new.leader, new.leader_epoch, new.isr) == (1, 5, [1, 2])
    # a partition it is not in sync for is left alone
    assert elect_after_bounce([1, 2, 3], st(1, 4, [1, 2]), {1, 2, 3}, {3}, 2) is None
    assert elect_after_bounce([1, 2, 3], st(1, 4, [1, 2, 3]), {1, 2, 3}, set(), 2) is None


def test_a_partition_only_the_bounced_broker_held_in_sync_comes_back_with_it():
    # failure step: offline (leader -1, ISR [1]); startup step: broker 1 leads again, at a
    # newer leader epoch than before; never an unclean election of an out-of-sync replica
    for unclean in (False, True):
        new = elect_after_bounce([1, 2, 3], st(1, 4, [1]), {1, 2, 3}, {1}, 2, unclean)
        assert (new.leader, new.leader_epoch, new.isr) == (1, 6, [1])
    # two brokers bounced at once, the third alone left in sync
    new = elect_after_bounce([1, 2, 3], st(1, 4, [1, 2, 3]), {1, 2, 3}, {1, 2}, 2)
    assert (new.leader, new.leader_epoch, new.isr) == (3, 5, [3])
