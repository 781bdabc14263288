"""Offset arithmetic of the gregor source: JSON form, resolving specs, planning, admission control."""
import pytest
from hypothesis import given, settings, strategies as st

from gregor.spark import offsets as off
from gregor.spark.options import OffsetSpec, OptionError

T0, T1 = ("t", 0), ("t", 1)


def test_json_form_is_sorted_and_round_trips():
    j = off.to_json({("b", 1): 5, ("a", 10): 1, ("a", 2): 3})
    assert list(j) == ["a", "b"] and list(j["a"]) == ["2", "10"]
    assert off.from_json(j) == {("b", 1): 5, ("a", 10): 1, ("a", 2): 3}
    with pytest.raises(ValueError, match="not a gregor offset"):
        off.from_json({"t": 5})


def no_times(_):
    raise AssertionError("not asked")


def test_resolve_sentinels_and_explicit():
    spec = OffsetSpec("offsets", {T0: -2, T1: 7})
    got = off.resolve(spec, [T0, T1], earliest={T0: 3, T1: 0}, latest={T0: 9, T1: 9}, for_times=no_times,
                      option="startingOffsets")
    assert got == {T0: 3, T1: 7}
    with pytest.raises(OptionError, match="not one for t-1"):
        off.resolve(OffsetSpec("offsets", {T0: 1}), [T0, T1], earliest={}, latest={}, for_times=no_times,
                    option="startingOffsets")


def test_resolve_timestamps():
    found = {T0: 4, T1: None}
    args = dict(earliest={T0: 0, T1: 0}, latest={T0: 10, T1: 20}, for_times=lambda w: found)
    with pytest.raises(OptionError, match="startingOffsetsByTimestampStrategy"):
        off.resolve(OffsetSpec("timestamp", timestamp=5), [T0, T1], option="startingTimestamp", **args)
    assert off.resolve(OffsetSpec("timestamp", timestamp=5), [T0, T1], option="s",
                       timestamp_strategy="latest", **args) == {T0: 4, T1: 20}
    assert off.resolve(OffsetSpec("timestamp", timestamp=5), [T0, T1], option="e", is_end=True,
                       **args) == {T0: 4, T1: 20}


def test_data_loss_fails_with_advice_or_skips():
    with pytest.raises(off.DataLossError, match="failOnDataLoss=false"):
        off.check_ranges({T0: 2}, {T0: 10}, {T0: 5}, fail_on_data_loss=True, context="q")
    assert off.check_ranges({T0: 2}, {T0: 10}, {T0: 5}, fail_on_data_loss=False, context="q") == {T0: 5}
    # end below start: the topic was recreated
    with pytest.raises(off.DataLossError, match="deleted and recreated"):
        off.check_ranges({T0: 20}, {T0: 3}, {T0: 0}, fail_on_data_loss=True, context="q")
    assert off.check_ranges({T0: 20}, {T0: 3}, {T0: 0}, fail_on_data_loss=False, context="q") == {T0: 0}
    assert off.check_ranges({T0: 5}, {T0: 10}, {T0: 5}, fail_on_data_loss=True, context="q") == {T0: 5}


def test_plan_one_range_per_partition_and_min_partitions():
    ranges = off.plan_ranges({T0: 0, T1: 5}, {T0: 100, T1: 5})
    assert ranges == [off.OffsetRange("t", 0, 0, 100)]  # empty partitions get no task
    split = off.plan_ranges({T0: 0, T1: 0}, {T0: 90, T1: 10}, min_partitions=5)
    assert len(split) == 5
    assert [r for r in split if r.partition == 1] == [off.OffsetRange("t", 1, 0, 10)]
    assert [(r.start, r.end) for r in split if r.partition == 0] == [(0, 23), (23, 46), (46, 68), (68, 90)]


def test_max_records_per_partition_cuts_ranges_then_min_partitions_applies():
    capped = off.plan_ranges({T0: 0, T1: 0}, {T0: 250, T1: 40}, max_records_per_partition=100)
    assert [(r.partition, r.start, r.end) for r in capped] == [(0, 0, 84), (0, 84, 167), (0, 167, 250),
                                                               (1, 0, 40)]
    both = off.plan_ranges({T0: 0, T1: 0}, {T0: 250, T1: 40}, min_partitions=8,
                           max_records_per_partition=100)
    assert len(both) >= 8 and all(r.size <= 100 for r in both)
    assert sum(r.size for r in both) == 290


def test_limit_splits_in_proportion_to_backlog():
    end = off.limit_offsets({T0: 0, T1: 100}, {T0: 300, T1: 200}, 100)
    assert end == {T0: 75, T1: 125}  # backlogs 300 and 100 -> shares 75 and 25
    assert off.limit_offsets({T0: 0}, {T0: 30}, 100) == {T0: 30}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=6),
       st.integers(1, 3000))
def test_limit_follows_sparks_rate_limit(pairs, cap):
    """Never past the latest offset; every partition with records gets at least one; the
    others' shares are rounded down, so the total is within one record per partition of the
    cap (or everything, when the backlog fits)."""
    start = {("t", i): s for i, (s, _) in enumerate(pairs)}
    latest = {("t", i): s + n for i, (s, n) in enumerate(pairs)}
    end = off.limit_offsets(start, latest, cap)
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)
    assert all(end[tp] > start[tp] for tp in start if latest[tp] > start[tp])
    total, taken = sum(n for _, n in pairs), sum(end[tp] - start[tp] for tp in start)
    if total <= cap:
        assert taken == total
    else:
        assert cap - len(pairs) <= taken <= cap + len(pairs)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=5), st.integers(1, 20))
def test_plan_covers_every_offset_once(sizes, min_parts):
    start = {("t", i): 10 for i in range(len(sizes))}
    end = {("t", i): 10 + n for i, n in enumerate(sizes)}
    ranges = off.plan_ranges(start, end, min_parts)
    covered = sorted((r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert covered == sorted((i, o) for i, n in enumerate(sizes) for o in range(10, 10 + n))
    assert all(r.size > 0 for r in ranges)
    if sum(sizes) >= min_parts:
        assert len(ranges) >= min(min_parts, sum(sizes))
