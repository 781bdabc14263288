"""The cooperative-sticky assignor: complete, balanced, sticky, and partitions that change
hands are held back until their owner gave them up (KIP-429)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gregor.client.consumer.group.assignors import MemberSubscription, parse_strategy
from gregor.client.consumer.group.sticky import cooperative_sticky_assign, sticky_assign

import pytest

TOPICS = ["a", "b"]


def members(n, owned=None, topics=TOPICS):
    owned = owned or {}
    return [MemberSubscription(f"m{i}", list(topics), None, owned.get(f"m{i}", []))
            for i in range(n)]


@given(n=st.integers(1, 6), counts=st.fixed_dictionaries({t: st.integers(0, 9) for t in TOPICS}),
       seed=st.randoms())
def test_complete_balanced_and_sticky(n, counts, seed):
    first = sticky_assign(members(n), counts)
    tps = sorted(tp for v in first.values() for tp in v)
    assert tps == sorted((t, p) for t in TOPICS for p in range(counts[t]))
    sizes = [len(v) for v in first.values()]
    assert max(sizes) - min(sizes) <= 1
    # one member more: the others keep everything they can
    second = sticky_assign(members(n + 1, first), counts)
    sizes = [len(v) for v in second.values()]
    assert max(sizes) - min(sizes) <= 1
    kept = sum(len(set(first[m]) & set(second[m])) for m in first)
    total = len(tps)
    assert kept >= total - -(-total // (n + 1))   # at most one new member's share moves


def test_moving_partitions_are_held_back_until_revoked():
    owned = {"m0": [("a", 0), ("a", 1), ("a", 2), ("a", 3)]}
    plan = cooperative_sticky_assign(members(2, owned, ["a"]), {"a": 4}, {"m0": 3, "m1": -1})
    assert plan == {"m0": [("a", 0), ("a", 1)], "m1": []}
    # after m0 revoked a-2 and a-3 and rejoined: the second rebalance hands them over
    owned = {"m0": [("a", 0), ("a", 1)]}
    plan = cooperative_sticky_assign(members(2, owned, ["a"]), {"a": 4}, {"m0": 4, "m1": 4})
    assert plan == {"m0": [("a", 0), ("a", 1)], "m1": [("a", 2), ("a", 3)]}


def test_newest_generation_wins_a_double_claim():
    owned = {"m0": [("a", 0)], "m1": [("a", 0)]}
    plan = sticky_assign(members(2, owned, ["a"]), {"a": 2}, {"m0": 2, "m1": 5})
    assert plan["m1"] == [("a", 0)]


def test_strategy_names():
    assert parse_strategy("cooperative-sticky") == ["cooperative-sticky"]
    assert parse_strategy("org.apache.kafka.clients.consumer.CooperativeStickyAssignor") == \
        ["cooperative-sticky"]
    with pytest.raises(ValueError, match="mixed"):
        parse_strategy("range,cooperative-sticky")
