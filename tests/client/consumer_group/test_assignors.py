"""The range and roundrobin assignors: Kafka's properties for any group, and the same
assignment as kafka-python's independent implementation of Java's algorithms."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client.consumer.group.assignors import (MemberSubscription, parse_strategy,
                                                    range_assign, roundrobin_assign)

TOPICS = ["a", "b", "c"]
groups = st.lists(st.sets(st.sampled_from(TOPICS), min_size=1), min_size=1, max_size=6)
counts = st.fixed_dictionaries({t: st.integers(0, 12) for t in TOPICS})


def _members(subs):
    return [MemberSubscription(f"m-{i:02d}", sorted(s)) for i, s in enumerate(subs)]


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
@given(subs=groups, partitions=counts)
def test_every_subscribed_partition_once_and_only_to_subscribers(assign, subs, partitions):
    members = _members(subs)
    out = assign(members, partitions)
    owners = {}
    for m in members:
        for tp in out[m.member_id]:
            assert tp[0] in m.topics
            assert tp not in owners
            owners[tp] = m.member_id
    wanted = {(t, p) for s in subs for t in s for p in range(partitions[t])}
    assert set(owners) == wanted


@given(n_members=st.integers(1, 6), partitions=counts)
def test_identical_subscriptions_are_balanced(n_members, partitions):
    members = _members([set(TOPICS)] * n_members)
    rr = roundrobin_assign(members, partitions)
    sizes = [len(v) for v in rr.values()]
    assert max(sizes) - min(sizes) <= 1
    rg = range_assign(members, partitions)
    for t in TOPICS:      # range balances per topic
        per = [sum(1 for tp in v if tp[0] == t) for v in rg.values()]
        assert max(per) - min(per) <= 1


@given(subs=groups,
       partitions=st.fixed_dictionaries({t: st.integers(1, 12) for t in TOPICS}))
def test_same_as_kafka_python(subs, partitions):
    rng = pytest.importorskip("kafka.coordinator.assignors.range")
    rr = pytest.importorskip("kafka.coordinator.assignors.roundrobin")
    from kafka.coordinator.consumer import ConsumerProtocolSubscription

    class Cluster:
        def partitions_for_topic(self, t):
            return set(range(partitions[t])) if partitions[t] else None

    class Member:
        def __init__(self, m):
            self.member_id = m.member_id
            self.group_instance_id = None
            self.metadata = ConsumerProtocolSubscription(0, list(m.topics), b"")
    members = _members(subs)
    theirs_in = [Member(m) for m in members]
    pairs = [(range_assign, rng.RangePartitionAssignor)]
    if all(s == subs[0] for s in subs):
        # kafka-python's roundrobin fails on differing subscriptions (its skip loop takes a
        # tuple for a member id), so it is only an oracle when they are the same
        pairs.append((roundrobin_assign, rr.RoundRobinPartitionAssignor))
    for ours_fn, cls in pairs:
        ours = ours_fn(members, partitions)
        theirs = cls.assign(Cluster(), theirs_in)
        for m in members:
            got = sorted((t, p) for t, ps in theirs[m.member_id].assigned_partitions
                         for p in ps)
            assert sorted(ours[m.member_id]) == got, (cls.__name__, m.member_id)


def test_static_members_first_by_instance_id():
    members = [MemberSubscription("a-dyn", ["t"]), MemberSubscription("z-static", ["t"], "i-1")]
    out = range_assign(members, {"t": 3})
    assert out["z-static"] == [("t", 0), ("t", 1)] and out["a-dyn"] == [("t", 2)]


def test_strategy_names():
    assert parse_strategy("range,roundrobin") == ["range", "roundrobin"]
    assert parse_strategy("org.apache.kafka.clients.consumer.RoundRobinAssignor") == \
        ["roundrobin"]
    with pytest.raises(ValueError, match="unknown"):
        parse_strategy("magic")


def test_roundrobin_with_differing_subscriptions_matches_kafkas_documented_example():
    members = [MemberSubscription("C0", ["t0"]), MemberSubscription("C1", ["t0", "t1"]),
               MemberSubscription("C2", ["t0", "t1", "t2"])]
    out = roundrobin_assign(members, {"t0": 1, "t1": 2, "t2": 3})
    assert out == {"C0": [("t0", 0)], "C1": [("t1", 0)],
                   "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]}


def test_range_matches_kafkas_documented_example():
    members = [MemberSubscription("C0", ["t0", "t1"]), MemberSubscription("C1", ["t0", "t1"])]
    out = range_assign(members, {"t0": 3, "t1": 3})
    assert out == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
                   "C1": [("t0", 2), ("t1", 2)]}
