"""Committed offsets: commits, transactional commits, fetch, delete, expiry and loading back."""
from __future__ import annotations

import struct

import pytest

from gregor.broker.group import log_records as L
from gregor.protocol.errors import ErrorCode as E

from .fakes import Answer, make
from .test_rebalance import join, join_new, stable_group, sync

TP0, TP1 = ("t", 0), ("t", 1)


def commit(c, offsets, group="g", generation=-1, member="", retention=-1):
    a = Answer()
    c.commit(group, generation, member, None,
             {tp: (o, -1, m) for tp, (o, m) in offsets.items()}, a, retention_ms=retention)
    return a


def txn_commit(c, pid, offsets, group="g", epoch=0):
    a = Answer()
    c.txn_commit(group, pid, epoch, -1, "", None,
                 {tp: (o, -1, "") for tp, o in offsets.items()}, a)
    return a


def fetched(c, group="g", partitions=None, stable=False):
    code, out = c.fetch_offsets(group, partitions, stable)
    assert code == E.NONE
    return {tp: (v[0], v[3]) for tp, v in out.items()}


def test_standalone_commit_is_stored_with_metadata_and_last_commit_wins():
    c, _, _ = make()
    assert commit(c, {TP0: (10, "m1"), TP1: (5, None)}).value == {TP0: E.NONE, TP1: E.NONE}
    assert commit(c, {TP0: (3, "rewind")}).value == {TP0: E.NONE}
    code, out = c.fetch_offsets("g", [TP0, TP1, ("t", 2)])
    assert out[TP0] == (3, -1, "rewind", E.NONE)
    assert out[TP1] == (5, -1, "", E.NONE)
    assert out[("t", 2)] == (-1, -1, "", E.NONE)
    assert fetched(c, "unknown", [TP0]) == {TP0: (-1, E.NONE)}


def test_commit_is_visible_only_once_durable():
    c, _, store = make()
    store.hold = True
    a = commit(c, {TP0: (7, "")})
    assert not a.done and fetched(c, partitions=[TP0]) == {TP0: (-1, E.NONE)}
    assert fetched(c, partitions=[TP0], stable=True) == {TP0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    store.release()
    assert a.value == {TP0: E.NONE} and fetched(c, partitions=[TP0]) == {TP0: (7, E.NONE)}


def test_commit_rules_against_group_state():
    c, _, _ = make()
    (m1,), _, gen, _ = stable_group(c)
    assert commit(c, {TP0: (1, "")}, generation=gen, member=m1).value == {TP0: E.NONE}
    assert commit(c, {TP0: (1, "")}, generation=gen + 1, member=m1).value == \
        {TP0: E.ILLEGAL_GENERATION}
    assert commit(c, {TP0: (1, "")}, generation=gen, member="x").value == \
        {TP0: E.UNKNOWN_MEMBER_ID}
    # a group with members refuses commits from outside it
    assert commit(c, {TP0: (1, "")}).value == {TP0: E.UNKNOWN_MEMBER_ID}
    # PreparingRebalance: commits from the revoke callback are accepted
    join(c, member=join(c)["member_id"])
    assert commit(c, {TP0: (2, "")}, generation=gen, member=m1).value == {TP0: E.NONE}
    # unknown group with a generation: the member must rejoin
    assert commit(c, {TP0: (1, "")}, group="other", generation=3, member="m").value == \
        {TP0: E.ILLEGAL_GENERATION}


def test_commit_during_completing_rebalance_is_refused():
    c, _, _ = make()
    a = join(c, v4=False)
    assert commit(c, {TP0: (1, "")}, generation=a["generation_id"],
                  member=a["member_id"]).value == {TP0: E.REBALANCE_IN_PROGRESS}


def test_metadata_too_large():
    c, _, _ = make(metadata_max_bytes=10)
    assert commit(c, {TP0: (1, "x" * 11), TP1: (1, "ok")}).value == \
        {TP0: E.OFFSET_METADATA_TOO_LARGE, TP1: E.NONE}


def test_store_errors_map_to_coordinator_errors():
    c, _, store = make()
    store.fail = E.NOT_ENOUGH_REPLICAS
    assert commit(c, {TP0: (1, "")}).value == {TP0: E.COORDINATOR_NOT_AVAILABLE}
    store.fail = E.MESSAGE_TOO_LARGE
    assert commit(c, {TP0: (1, "")}).value == {TP0: E.INVALID_COMMIT_OFFSET_SIZE}


def test_transactional_offsets_are_pending_until_the_marker():
    c, _, store = make()
    p = c.partition_of("g")
    assert txn_commit(c, 42, {TP0: 100}).value == {TP0: E.NONE}
    assert fetched(c, partitions=[TP0]) == {TP0: (-1, E.NONE)}
    assert fetched(c, partitions=[TP0], stable=True) == {TP0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    store.marker(p, 42, commit=True)
    c.on_txn_marker(p, 42, True)
    assert fetched(c, partitions=[TP0], stable=True) == {TP0: (100, E.NONE)}
    txn_commit(c, 42, {TP0: 200})
    store.marker(p, 42, commit=False)
    c.on_txn_marker(p, 42, False)
    assert fetched(c, partitions=[TP0], stable=True) == {TP0: (100, E.NONE)}


def test_a_later_plain_commit_wins_over_an_earlier_transactional_one():
    c, _, _ = make()
    p = c.partition_of("g")
    txn_commit(c, 7, {TP0: 50})
    commit(c, {TP0: (60, "")})
    c.on_txn_marker(p, 7, True)
    assert fetched(c, partitions=[TP0]) == {TP0: (60, E.NONE)}


def test_everything_loads_back_from_the_log():
    c, t, store = make()
    (m1,), leader, gen, _ = stable_group(c)
    commit(c, {TP0: (11, "meta")}, generation=gen, member=m1)
    commit(c, {("u", 0): (5, "")}, group="solo")
    p = c.partition_of("tx")
    txn_commit(c, 9, {TP0: 70}, group="tx")
    store.marker(p, 9, commit=True)
    txn_commit(c, 10, {TP1: 80}, group="tx")        # still open at the crash
    c2, _, _ = make(timers=t, store=store)
    assert fetched(c2, partitions=[TP0]) == {TP0: (11, E.NONE)}
    assert c2.fetch_offsets("g", [TP0])[1][TP0][2] == "meta"
    assert fetched(c2, "solo", [("u", 0)]) == {("u", 0): (5, E.NONE)}
    assert fetched(c2, "tx", [TP0, TP1], stable=True) == \
        {TP0: (70, E.NONE), TP1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    c2.on_txn_marker(p, 10, True)
    assert fetched(c2, "tx", [TP1]) == {TP1: (80, E.NONE)}
    # the member comes back as it was: it keeps heartbeating with its generation
    d = c2.describe("g")
    assert d["group_state"] == "Stable" and d["members"][0]["member_id"] == m1
    assert d["members"][0]["member_assignment"] == f"assign-{m1}".encode()
    assert c2.heartbeat("g", gen, m1, None) == E.NONE
    # ... and expires if it does not
    t.advance(20000)
    assert c2.describe("g")["group_state"] == "Empty"


def test_deleted_group_and_offsets_stay_deleted_after_load():
    c, t, store = make()
    commit(c, {TP0: (1, "")})
    a = Answer()
    c.delete_groups(["g"], a)
    assert a.value == {"g": E.NONE}
    c2, _, _ = make(timers=t, store=store)
    assert "g" not in c2.groups


def test_offset_delete_refuses_subscribed_topics():
    c, _, _ = make()
    a = join(c, v4=False, protocols=[("range", _subscription(["t"]))])
    sync(c, a["member_id"], 1, {a["member_id"]: b""})
    commit(c, {TP0: (1, ""), ("other", 0): (2, "")}, generation=1, member=a["member_id"])
    d = Answer()
    c.delete_offsets("g", [TP0, ("other", 0)], lambda code, r: d((code, r)))
    assert d.value == (E.NONE, {TP0: E.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): E.NONE})
    assert fetched(c, partitions=[("other", 0)]) == {("other", 0): (-1, E.NONE)}
    d = Answer()
    c.delete_offsets("nope", [TP0], lambda code, r: d((code, r)))
    assert d.value == (E.GROUP_ID_NOT_FOUND, {})


def test_offsets_of_an_empty_group_expire_after_retention():
    c, t, store = make(retention_ms=60000)
    (m1,), _, gen, _ = stable_group(c)
    commit(c, {TP0: (1, "")}, generation=gen, member=m1)
    commit(c, {TP0: (1, "")}, group="solo")
    for _ in range(6):                   # 30 s of a live member
        t.advance(5000)
        assert c.heartbeat("g", gen, m1, None) == E.NONE
    c.leave("g", [(m1, None)])          # empty from now
    t.advance(40000)                     # solo's commit is 70 s old, g empty for 40 s
    assert c.expire_offsets() == 1
    assert "solo" not in c.groups
    assert fetched(c, partitions=[TP0]) == {TP0: (1, E.NONE)}
    t.advance(30000)
    assert c.expire_offsets() == 1 and "g" not in c.groups
    c2, _, _ = make(timers=t, store=store)
    assert not c2.groups


def _subscription(topics):
    import struct
    body = struct.pack(">hi", 0, len(topics))
    for name in topics:
        body += struct.pack(">h", len(name)) + name.encode()
    return body + struct.pack(">i", -1)


@pytest.mark.parametrize("group,topic,partition", [
    ("g", "t", 0), ("", "x" * 249, 2 ** 31 - 1), ("grüppe-ü", "topic.é", 7)])
def test_offset_key_packing_matches_the_schema(group, topic, partition):
    expected = struct.pack(">h", 1) + L._OFFSET_KEY.encode(
        {"group": group, "topic": topic, "partition": partition})
    assert L.encode_offset_key(group, topic, partition) == expected
    assert L.decode_key(expected) == L.OffsetKey(group, topic, partition)


@pytest.mark.parametrize("value", [
    L.OffsetValue(5, -1, "", 1700000000000),
    L.OffsetValue(2 ** 62, 17, "métadonnées" * 100, 1),
    L.OffsetValue(0, 3, "m", 1700000000000, 1700000060000)])
def test_offset_value_packing_matches_the_schema(value):
    version = 1 if value.expire_timestamp >= 0 else 3
    expected = struct.pack(">h", version) + L._OFFSET_VALUES[version].encode({
        "offset": value.offset, "leader_epoch": value.leader_epoch,
        "metadata": value.metadata, "commit_timestamp": value.commit_timestamp,
        "expire_timestamp": value.expire_timestamp})
    assert L.encode_offset_value(value) == expected
    back = L.decode_offset_value(expected)
    assert (back.offset, back.metadata, back.commit_timestamp, back.expire_timestamp) == (
        value.offset, value.metadata, value.commit_timestamp, value.expire_timestamp)


def test_a_group_a_commit_creates_is_listed_once_that_commit_is_stored():
    # Listed before its offsets are readable, a lag tool sampling ListGroups then OffsetFetch
    # reads a group with no offsets (lag 0); Kafka's coordinator shows both at once.
    c, _, store = make()
    store.hold = True
    a = commit(c, {TP0: (7, ""), TP1: (9, "")}, group="fresh")
    t = txn_commit(c, 42, {TP0: 3}, group="txn-fresh")
    assert not a.done and c.list_groups() == []
    assert c.describe("fresh")["group_state"] == "Dead"
    assert c.groups_by_state()["Empty"] == 0
    assert fetched(c, "fresh") == {}
    store.release()
    assert a.value == {TP0: E.NONE, TP1: E.NONE} and t.value == {TP0: E.NONE}
    assert sorted((g["group_id"], g["group_state"]) for g in c.list_groups()) == \
        [("fresh", "Empty"), ("txn-fresh", "Empty")]
    assert c.describe("fresh")["group_state"] == "Empty"
    assert fetched(c, "fresh") == {TP0: (7, E.NONE), TP1: (9, E.NONE)}


def test_a_group_whose_first_commit_failed_is_not_left_behind():
    c, _, store = make()
    store.fail = E.NOT_ENOUGH_REPLICAS
    assert commit(c, {TP0: (1, "")}, group="failed").value == {TP0: E.COORDINATOR_NOT_AVAILABLE}
    assert "failed" not in c.groups and c.list_groups() == []
    store.fail = 0
    assert commit(c, {TP0: (1, "")}, group="failed").value == {TP0: E.NONE}
    assert [g["group_id"] for g in c.list_groups()] == ["failed"]
    # a member that joins meanwhile makes the group shown at once
    store.hold = True
    commit(c, {TP0: (1, "")}, group="joined")
    assert "joined" not in [g["group_id"] for g in c.list_groups()]
    join_new(c, group="joined")
    assert "joined" in [g["group_id"] for g in c.list_groups()]
