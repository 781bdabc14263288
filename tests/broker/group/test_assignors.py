"""The server-side assignors of KIP-848 groups (uniform, range), as properties: every
partition of every subscribed topic goes to exactly one member subscribed to it, the result
is balanced, and uniform is sticky."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.broker.group.assignors import range_, uniform


def _tid(i: int) -> bytes:
    return bytes([i + 1]) * 16


@st.composite
def groups(draw, homogeneous=None):
    n_topics = draw(st.integers(1, 5))
    topics = {_tid(i): draw(st.integers(0, 12)) for i in range(n_topics)}
    n_members = draw(st.integers(1, 8))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    if same:
        subs = set(draw(st.sets(st.sampled_from(sorted(topics)), min_size=1)))
        members = {f"m{i}": set(subs) for i in range(n_members)}
    else:
        members = {f"m{i}": set(draw(st.sets(st.sampled_from(sorted(topics)))))
                   for i in range(n_members)}
    return members, topics


def _check_exact_cover(members, topics, out) -> None:
    owner = {}
    for m, a in out.items():
        for t, ps in a.items():
            assert t in members[m], f"{m} got topic {t} it does not subscribe to"
            for p in ps:
                assert 0 <= p < topics[t]
                assert (t, p) not in owner, f"{(t, p)} given to {owner[(t, p)]} and {m}"
                owner[(t, p)] = m
    wanted = {(t, p) for t, n in topics.items() for p in range(n)
              if any(t in s for s in members.values())}
    assert set(owner) == wanted


def _count(a) -> int:
    return sum(len(ps) for ps in a.values())


@settings(max_examples=300, deadline=None)
@given(groups())
def test_uniform_assigns_every_subscribed_partition_exactly_once(g):
    members, topics = g
    _check_exact_cover(members, topics, uniform(members, topics, {}))


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_is_balanced_within_one_when_subscriptions_are_the_same(g):
    members, topics = g
    counts = [_count(a) for a in uniform(members, topics, {}).values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=False))
def test_uniform_leaves_no_move_that_narrows_a_gap(g):
    members, topics = g
    out = uniform(members, topics, {})
    counts = {m: _count(a) for m, a in out.items()}
    for m, a in out.items():
        for t in a:
            for other, subs in members.items():
                if t in subs:
                    assert counts[other] >= counts[m] - 1, (m, other, counts)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_uniform_is_sticky(g):
    members, topics = g
    first = uniform(members, topics, {})
    # the same inputs again: nothing moves
    assert uniform(members, topics, first) == first


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_moves_only_what_a_newcomer_needs(g):
    members, topics = g
    first = uniform(members, topics, {})
    newcomer = dict(members, new=set(members["m0"]))
    second = uniform(newcomer, topics, first)
    _check_exact_cover(newcomer, topics, second)
    moved = sum(len(ps - second[m].get(t, set())) for m, a in first.items()
                for t, ps in a.items())
    assert moved == _count(second["new"])
    counts = [_count(a) for a in second.values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300, deadline=None)
@given(groups())
def test_range_assigns_every_subscribed_partition_exactly_once_in_ranges(g):
    members, topics = g
    out = range_(members, topics, {})
    _check_exact_cover(members, topics, out)
    for t, n in topics.items():
        subs = sorted(m for m, s in members.items() if t in s)
        sizes = [len(out[m].get(t, ())) for m in subs]
        if subs:
            assert max(sizes) - min(sizes) <= 1
            assert sizes == sorted(sizes, reverse=True)      # the first ones get the extra
        for m in subs:
            ps = sorted(out[m].get(t, ()))
            assert ps == list(range(ps[0], ps[0] + len(ps))) if ps else True


def test_range_co_partitions_topics_with_the_same_partition_count():
    members = {"a": {_tid(0), _tid(1)}, "b": {_tid(0), _tid(1)}, "c": {_tid(0), _tid(1)}}
    out = range_(members, {_tid(0): 5, _tid(1): 5}, {})
    for m in members:
        assert out[m][_tid(0)] == out[m][_tid(1)]
    assert out["a"][_tid(0)] == {0, 1} and out["c"][_tid(0)] == {4}
