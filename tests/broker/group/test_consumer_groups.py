"""KIP-848 consumer groups in the coordinator, without I/O: joining, the target assignment,
reconciliation across members, epochs and fencing, leaving, static members, session and
rebalance timeouts, topic changes, offsets of members, and reloading from the records."""
from __future__ import annotations

from gregor.broker.group import consumer_records as R
from gregor.broker.group.consumer_group import ConsumerGroup, MemberState
from gregor.protocol.errors import ErrorCode as E

from .consumer_fakes import (FakeMetadata, Member, heartbeat, make_consumer,
                             no_partition_twice, reload, settle)
from .fakes import Answer

A, B = FakeMetadata(a=1, b=1).id("a"), FakeMetadata(a=1, b=1).id("b")


def all_of(meta, *names):
    return {(meta.id(n), p) for n in names for p in range(meta.topics[n][1])}


def test_first_member_gets_every_partition_at_epoch_one():
    c, _, store = make_consumer()
    m = Member(c, "m1", ["a", "b"])
    r = m.join()
    assert r["error_code"] == 0 and r["member_id"] == "m1" and r["member_epoch"] == 1
    assert r["heartbeat_interval_ms"] == 5000
    assert m.partitions() == all_of(c.metadata, "a", "b")
    g = c.groups["g"]
    assert isinstance(g, ConsumerGroup) and g.group_epoch == 1 and g.assignment_epoch == 1
    assert c.consumer_describe("g")["group_state"] == "Stable"
    # the records written: group epoch, member, target, current assignment, in Kafka's keys
    kinds = {int.from_bytes(rec.key[:2], "big") for batches in store.batches.values()
             for batch in batches for rec in batch.records}
    assert {3, 4, 5, 6, 7, 8} <= kinds


def test_v0_join_gets_a_member_id_from_the_coordinator_and_v1_must_bring_one():
    c, _, _ = make_consumer()
    r = heartbeat(c, version=0, member_id="", epoch=0, topics=["a"], owned=[])
    assert r["error_code"] == 0 and len(r["member_id"]) == 22      # a base64 uuid, as Kafka's
    r = heartbeat(c, version=1, member_id="", epoch=0, topics=["a"], owned=[])
    assert r["error_code"] == E.INVALID_REQUEST


def test_invalid_first_heartbeats_are_refused_as_kafka_refuses_them():
    c, _, _ = make_consumer()
    cases = [
        dict(member_id="m", epoch=0, topics=None, owned=[]),             # no subscription
        dict(member_id="m", epoch=0, topics=["a"], owned=None),          # owned not empty
        dict(member_id="m", epoch=0, topics=["a"], owned=[], rebalance_timeout_ms=-1),
        dict(member_id="m", epoch=-3, topics=["a"], owned=[]),
        dict(member_id="m", epoch=-2, topics=["a"], owned=[]),           # static leave, no id
        dict(member_id="m", epoch=0, topics=["a"], owned=[], instance_id=""),
    ]
    for kw in cases:
        assert heartbeat(c, **kw)["error_code"] == E.INVALID_REQUEST, kw
    r = heartbeat(c, member_id="m", epoch=0, topics=["a"], owned=[], assignor="sticky")
    assert r["error_code"] == E.UNSUPPORTED_ASSIGNOR
    r = heartbeat(c, member_id="m", epoch=0, topics=None, owned=[], regex="a(")
    assert r["error_code"] == E.INVALID_REGULAR_EXPRESSION
    # librdkafka sends an empty regex beside topic names: that is no regex
    assert heartbeat(c, member_id="m", epoch=0, topics=["a"], owned=[],
                     regex="")["error_code"] == 0


def test_second_member_waits_for_the_first_to_revoke():
    c, _, _ = make_consumer()
    m1, m2 = Member(c, "m1", ["a", "b"]), Member(c, "m2", ["a", "b"])
    m1.join()
    r = m2.join()
    # m2 is at the new epoch but gets nothing yet: m1 still owns everything
    assert r["member_epoch"] == 2 and m2.partitions() == set()
    assert c.consumer_describe("g")["group_state"] == "Reconciling"
    target2 = c.groups["g"].target["m2"]
    assert sum(len(p) for p in target2.values()) == 3
    # m1 heartbeats at epoch 1: told to give up m2's share, it stays at epoch 1 meanwhile
    r = m1.beat()
    assert r["member_epoch"] == 1 and len(m1.partitions()) == 3
    assert c.groups["g"].members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    # m2 asks again before m1 confirmed: still nothing (m1 may still be reading them)
    m2.owned = {}
    r = c.groups["g"].members["m1"]
    assert sum(len(p) for p in r.pending_revocation.values()) == 3
    m2.beat()
    assert m2.partitions() == set()
    # m1 confirms it let go (its owned list shrank): it moves to epoch 2
    assert m1.beat()["member_epoch"] == 2
    m2.beat()
    assert len(m2.partitions()) == 3
    assert m1.partitions() | m2.partitions() == all_of(c.metadata, "a", "b")
    no_partition_twice([m1, m2])
    assert c.consumer_describe("g")["group_state"] == "Stable"


def test_many_members_never_own_a_partition_twice_while_they_come_and_go():
    meta = FakeMetadata(a=7, b=5, c=3)
    c, timers, _ = make_consumer(meta)
    members = [Member(c, f"m{i}", ["a", "b", "c"] if i % 2 else ["a", "b"]) for i in range(5)]
    check = lambda: no_partition_twice(members)      # noqa: E731
    for m in members:
        m.join()
        check()
        settle(members, check=check)
    owned = set().union(*(m.partitions() for m in members))
    assert owned == all_of(meta, "a", "b", "c")
    counts = sorted(len(m.partitions()) for m in members)
    assert counts[-1] - counts[0] <= 1
    # two leave, one changes its subscription
    for m in members[:2]:
        assert m.beat(epoch=-1)["member_epoch"] == -1
    members = members[2:]
    members[0].topics = ["c"]
    members[0].beat(topics=["c"])
    settle(members, check=lambda: no_partition_twice(members))
    assert set().union(*(m.partitions() for m in members)) == all_of(meta, "a", "b", "c")
    assert {t for t, _ in members[0].partitions()} <= {meta.id("c")}


def test_fencing_by_epoch():
    c, _, _ = make_consumer()
    m1 = Member(c, "m1", ["a"])
    m1.join()
    assert m1.beat(epoch=5)["error_code"] == E.FENCED_MEMBER_EPOCH      # from the future
    m2 = Member(c, "m2", ["a"])
    m2.join()
    settle([m1, m2])
    assert m1.epoch == 2
    # the previous epoch with a subset of the partitions: a lost response, accepted
    assert m1.beat(epoch=1)["error_code"] == 0
    # the previous epoch while claiming partitions it no longer has: fenced
    r = heartbeat(c, member_id="m1", epoch=1, owned=[{"topic_id": A, "partitions": [0, 1, 2, 3]}])
    assert r["error_code"] == E.FENCED_MEMBER_EPOCH
    assert heartbeat(c, member_id="m1", epoch=0, topics=["a"], owned=[])["error_code"] == \
        E.FENCED_MEMBER_EPOCH
    assert heartbeat(c, member_id="zz", epoch=3)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert heartbeat(c, group="nope", member_id="x", epoch=3)["error_code"] == \
        E.GROUP_ID_NOT_FOUND


def test_a_fenced_heartbeat_that_changed_the_group_is_answered_after_its_write():
    """The heartbeat changes the subscription (a group epoch bump, records to write) and the
    member is then fenced (its state was unreadable when loaded, and it claims partitions):
    the answer waits for the write and still carries FENCED_MEMBER_EPOCH."""
    from .consumer_fakes import request
    c, _, store = make_consumer()
    m1, m2 = Member(c, "m1", ["a"]), Member(c, "m2", ["a"])
    m1.join()
    m2.join()
    settle([m1, m2])
    c.groups["g"].members["m1"].state = MemberState.UNKNOWN
    store.hold = True
    a = Answer()
    c.consumer_heartbeat(request(member_id="m1", epoch=m1.epoch, topics=["a", "b"],
                                 owned=m1.owned_list()), 1, "client", "/127.0.0.1", a)
    assert not a.done                      # the group's new epoch is being written
    store.hold = False
    store.release()
    assert a.done and a.value["error_code"] == E.FENCED_MEMBER_EPOCH


def test_leave_gives_the_partitions_to_the_others():
    c, _, _ = make_consumer()
    m1, m2 = Member(c, "m1", ["a", "b"]), Member(c, "m2", ["a", "b"])
    m1.join()
    m2.join()
    settle([m1, m2])
    epoch = c.groups["g"].group_epoch
    r = m1.beat(epoch=-1)
    assert r["error_code"] == 0 and r["member_epoch"] == -1
    assert c.groups["g"].group_epoch == epoch + 1 and "m1" not in c.groups["g"].members
    m2.beat()
    assert m2.partitions() == all_of(c.metadata, "a", "b")
    assert m2.beat(epoch=-1)["error_code"] == 0
    assert c.consumer_describe("g")["group_state"] == "Empty"
    assert heartbeat(c, member_id="m2", epoch=-1)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_static_member_rejoins_with_its_partitions_without_a_rebalance():
    c, timers, _ = make_consumer(consumer_session_timeout_ms=10000)
    s1 = Member(c, "s1", ["a", "b"], instance_id="i1")
    d = Member(c, "d", ["a", "b"])
    s1.join()
    d.join()
    settle([s1, d])
    had = s1.partitions()
    epoch = c.groups["g"].group_epoch
    # a second instance while the first is still in: refused
    r = heartbeat(c, member_id="s1b", epoch=0, topics=["a", "b"], owned=[], instance_id="i1")
    assert r["error_code"] == E.UNRELEASED_INSTANCE_ID
    assert s1.beat(epoch=-2)["member_epoch"] == -2
    timers.advance(5000)
    d.beat()
    assert d.partitions().isdisjoint(had)            # not handed out while it is away
    back = Member(c, "s1-new", ["a", "b"], instance_id="i1")
    r = back.join()
    assert r["error_code"] == 0 and back.partitions() == had
    assert c.groups["g"].group_epoch == epoch
    assert "s1" not in c.groups["g"].members
    # the old instance is fenced by the new one
    assert s1.beat(epoch=s1.epoch)["error_code"] == E.FENCED_INSTANCE_ID
    assert heartbeat(c, member_id="x", epoch=3, instance_id="nobody")["error_code"] == \
        E.UNKNOWN_MEMBER_ID


def test_static_member_gone_past_its_session_loses_its_partitions():
    c, timers, _ = make_consumer(consumer_session_timeout_ms=3000)
    s1, d = Member(c, "s1", ["a"], instance_id="i1"), Member(c, "d", ["a"])
    s1.join()
    d.join()
    settle([s1, d])
    s1.beat(epoch=-2)
    for _ in range(4):
        timers.advance(1000)
        d.beat()
    assert "s1" not in c.groups["g"].members
    assert d.partitions() == all_of(c.metadata, "a")


def test_silent_member_expires_after_the_session_timeout():
    c, timers, _ = make_consumer(consumer_session_timeout_ms=3000)
    m1, m2 = Member(c, "m1", ["a"]), Member(c, "m2", ["a"])
    m1.join()
    m2.join()
    settle([m1, m2])
    for _ in range(5):
        timers.advance(1000)
        m2.beat()                    # m1 is silent from here on
    assert "m1" not in c.groups["g"].members
    assert m2.partitions() == all_of(c.metadata, "a")
    assert m1.beat()["error_code"] == E.UNKNOWN_MEMBER_ID
    assert m1.join()["error_code"] == 0                  # and it may join again


def test_member_that_does_not_revoke_is_removed_after_its_rebalance_timeout():
    c, timers, _ = make_consumer(consumer_session_timeout_ms=60000)
    m1 = Member(c, "m1", ["a"], rebalance_timeout_ms=2000)
    m1.join()
    m2 = Member(c, "m2", ["a"])
    m2.join()
    # m1 is told to revoke but keeps reporting every partition
    keep = m1.owned_list()
    r = heartbeat(c, member_id="m1", epoch=1, owned=keep)
    assert c.groups["g"].members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    timers.advance(1000)
    heartbeat(c, member_id="m1", epoch=1, owned=keep)
    assert "m1" in c.groups["g"].members
    timers.advance(1500)
    assert "m1" not in c.groups["g"].members
    m2.beat()
    assert m2.partitions() == all_of(c.metadata, "a")
    assert r["error_code"] == 0


def test_new_partitions_and_topics_change_the_assignment():
    meta = FakeMetadata(a=2)
    c, _, _ = make_consumer(meta)
    m1, m2 = Member(c, "m1", ["a", "new"]), Member(c, "m2", ["a", "new"])
    m1.join()
    m2.join()
    settle([m1, m2])
    epoch = c.groups["g"].group_epoch
    meta.add("a", 6)                  # partitions added
    meta.add("new", 2)                # a subscribed topic created
    settle([m1, m2])
    assert c.groups["g"].group_epoch == epoch + 1
    assert m1.partitions() | m2.partitions() == all_of(meta, "a", "new")
    no_partition_twice([m1, m2])
    del meta.topics["new"]            # deleted
    settle([m1, m2])
    assert m1.partitions() | m2.partitions() == all_of(meta, "a")


def test_range_assignor_when_members_ask_for_it():
    meta = FakeMetadata(a=4, b=4)
    c, _, _ = make_consumer(meta)
    m1 = Member(c, "m1", ["a", "b"], assignor="range")
    m2 = Member(c, "m2", ["a", "b"], assignor="range")
    m1.join()
    m2.join()
    settle([m1, m2])
    a, b = meta.id("a"), meta.id("b")
    assert m1.owned == {a: {0, 1}, b: {0, 1}} and m2.owned == {a: {2, 3}, b: {2, 3}}
    assert c.consumer_describe("g")["assignor_name"] == "range"
    # the group uses the assignor most members ask for
    m3 = Member(c, "m3", ["a", "b"], assignor="uniform")
    m3.join()
    assert c.consumer_describe("g")["assignor_name"] == "range"
    m4 = Member(c, "m4", ["a", "b"], assignor="uniform")
    m5 = Member(c, "m5", ["a", "b"], assignor="uniform")
    m4.join()
    m5.join()
    assert c.consumer_describe("g")["assignor_name"] == "uniform"
    settle([m1, m2, m3, m4, m5], check=lambda: no_partition_twice([m1, m2, m3, m4, m5]))
    assert sorted(len(m.partitions()) for m in (m1, m2, m3, m4, m5)) == [1, 1, 2, 2, 2]


def test_group_max_size():
    c, _, _ = make_consumer(consumer_max_size=1)
    Member(c, "m1", ["a"]).join()
    assert Member(c, "m2", ["a"]).join()["error_code"] == E.GROUP_MAX_SIZE_REACHED
    assert set(c.groups["g"].members) == {"m1"}
    # a refused first join leaves no group behind
    c, _, store = make_consumer(consumer_max_size=0)
    assert Member(c, "m1", ["a"]).join()["error_code"] == E.GROUP_MAX_SIZE_REACHED
    assert "g" not in c.groups and c.list_groups() == [] and not store.batches


def test_reload_from_records_keeps_members_epochs_and_assignments():
    c, timers, store = make_consumer(consumer_session_timeout_ms=5000)
    m1, m2 = Member(c, "m1", ["a", "b"]), Member(c, "m2", ["a"], instance_id="i2")
    m1.join()
    m2.join()
    settle([m1, m2])
    m3 = Member(c, "m3", ["b"])
    m3.join()
    m3.beat(epoch=-1)               # tombstones must win at load
    before = c.consumer_describe("g")
    c2 = reload(c, timers, store)
    after = c2.consumer_describe("g")
    assert after == before
    g = c2.groups["g"]
    assert set(g.members) == {"m1", "m2"} and g.static_members == {"i2": "m2"}
    # members carry on with their epochs, no rebalance
    for m in (m1, m2):
        m.c = c2
        assert m.beat()["error_code"] == 0
    assert c2.groups["g"].group_epoch == before["group_epoch"]
    # members that are gone expire after the session timeout
    timers.advance(4000)
    m1.beat()
    timers.advance(2000)
    assert set(c2.groups["g"].members) == {"m1"}


def test_reload_in_the_middle_of_a_reconciliation():
    c, timers, store = make_consumer()
    m1, m2 = Member(c, "m1", ["a", "b"]), Member(c, "m2", ["a", "b"])
    m1.join()
    m2.join()
    # told to revoke; the coordinator moves before it reports that it did
    m1._apply(heartbeat(c, member_id="m1", epoch=1, owned=m1.owned_list()))
    c2 = reload(c, timers, store)
    g = c2.groups["g"]
    assert g.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    m1.c = m2.c = c2
    settle([m1, m2], check=lambda: no_partition_twice([m1, m2]))
    assert m1.partitions() | m2.partitions() == all_of(c.metadata, "a", "b")
    assert c2.consumer_describe("g")["group_state"] == "Stable"


def test_offsets_of_a_consumer_group_check_the_member_epoch():
    c, _, _ = make_consumer()
    m1 = Member(c, "m1", ["a"])
    m1.join()

    def commit(member_id, epoch):
        a = Answer()
        c.commit("g", epoch, member_id, None, {("a", 0): (5, -1, "")}, a)
        return a.value[("a", 0)]
    assert commit("m1", 1) == 0
    assert commit("m1", 0) == E.STALE_MEMBER_EPOCH
    old_version = Answer()
    c.commit("g", 1, "m1", None, {("a", 0): (6, -1, "")}, old_version, api_version=8)
    assert old_version.value[("a", 0)] == E.UNSUPPORTED_VERSION
    assert commit("zz", 1) == E.UNKNOWN_MEMBER_ID
    assert commit("", -1) == E.UNKNOWN_MEMBER_ID       # not while the group has members
    assert c.fetch_offsets("g", [("a", 0)], member_id="m1", member_epoch=1)[1][("a", 0)][0] == 5
    assert c.fetch_offsets("g", [("a", 0)], member_id="m1", member_epoch=7)[0] == \
        E.STALE_MEMBER_EPOCH
    assert c.fetch_offsets("g", [("a", 0)])[1][("a", 0)][0] == 5          # admin
    def txn_commit(member_id, epoch):
        a = Answer()
        c.txn_commit("g", 7, 0, epoch, member_id, None, {("a", 2): (1, -1, "")}, a)
        return a.value[("a", 2)]
    assert txn_commit("m1", 1) == 0
    assert txn_commit("m1", 3) == E.STALE_MEMBER_EPOCH
    assert txn_commit("", -1) == E.UNKNOWN_MEMBER_ID
    m1.beat(epoch=-1)
    assert commit("", -1) == 0                         # empty: standalone commits again
    assert txn_commit("", -1) == 0


def test_classic_and_consumer_groups_keep_to_their_own_protocol():
    c, _, _ = make_consumer()
    Member(c, "m1", ["a"]).join()
    a = Answer()
    c.join("g", "", None, "consumer", [("range", b"")], 10000, 10000, "c", "/h", True, a)
    assert a["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert c.heartbeat("g", 1, "m1", None) == E.UNKNOWN_MEMBER_ID
    assert c.describe("g")["group_state"] == "Dead"
    # a classic group with members refuses consumer-protocol members...
    a = Answer()
    c.join("classic", "", None, "consumer", [("range", b"")], 10000, 10000, "c", "/h", False, a)
    assert a["error_code"] == 0
    assert heartbeat(c, group="classic", member_id="x", epoch=0, topics=["a"],
                     owned=[])["error_code"] == E.GROUP_ID_NOT_FOUND
    assert c.consumer_describe("classic")["error_code"] == E.GROUP_ID_NOT_FOUND
    assert c.consumer_describe("g")["error_code"] == 0
    # ...while an empty classic group with offsets becomes a consumer group, keeping them
    a = Answer()
    c.commit("standalone", -1, "", None, {("a", 1): (9, -1, "")}, a)
    assert heartbeat(c, group="standalone", member_id="x", epoch=0, topics=["a"],
                     owned=[])["error_code"] == 0
    assert isinstance(c.groups["standalone"], ConsumerGroup)
    assert c.fetch_offsets("standalone", [("a", 1)])[1][("a", 1)][0] == 9
    listed = {g["group_id"]: g for g in c.list_groups()}
    assert listed["g"]["group_type"] == "consumer" and listed["g"]["group_state"] == "Stable"
    assert listed["classic"]["group_type"] == "classic"
    assert {g["group_id"] for g in c.list_groups(types={"consumer"})} == {"g", "standalone"}
    assert {g["group_id"] for g in c.list_groups(states={"stable"})} >= {"g", "standalone"}
    assert c.consumer_groups_by_state()["Stable"] == 2


def test_delete_and_expire_an_empty_consumer_group():
    c, timers, store = make_consumer(retention_ms=1000)
    m = Member(c, "m1", ["a"])
    m.join()
    got = Answer()
    c.delete_groups(["g"], got)
    assert got.value == {"g": E.NON_EMPTY_GROUP}
    m.beat(epoch=-1)
    got = Answer()
    c.delete_groups(["g"], got)
    assert got.value == {"g": 0} and "g" not in c.groups
    assert "g" not in reload(c, timers, store).groups
    c, timers, store = make_consumer(retention_ms=1000)
    m = Member(c, "m1", ["a"])
    m.join()
    m.beat(epoch=-1)
    timers.advance(2000)
    c.expire_offsets()
    assert "g" not in c.groups


def test_heartbeat_answers_wait_for_the_groups_earlier_writes():
    c, _, store = make_consumer()
    m1 = Member(c, "m1", ["a"])
    m1.join()
    store.hold = True
    a = Answer()
    c.consumer_heartbeat(
        {"group_id": "g", "member_id": "m2", "member_epoch": 0, "instance_id": None,
         "rack_id": None, "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["a"],
         "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
        1, "c", "/h", a)
    b = Answer()
    c.consumer_heartbeat(
        {"group_id": "g", "member_id": "m1", "member_epoch": 1, "instance_id": None,
         "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
         "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None},
        1, "c", "/h", b)
    assert not a.done and not b.done
    store.release()
    assert a.done and b.done


def test_records_round_trip_in_kafkas_layout():
    key = R.encode_key(R.MEMBER_METADATA, "grp", "mem")
    assert key == b"\x00\x05\x00\x03grp\x00\x03mem"
    assert R.encode_key(R.GROUP_METADATA, "grp") == b"\x00\x03\x00\x03grp"
    v = R.encode_value(R.GROUP_METADATA, {"epoch": 7})
    assert v == b"\x00\x00\x00\x00\x00\x07\x00"        # version 0, epoch, no tagged fields
    cur = {"member_epoch": 3, "previous_member_epoch": 2, "state": 1,
           "assigned_partitions": R.tps({A: {2, 1}}),
           "partitions_pending_revocation": R.tps({B: {0}})}
    assert R.decode_value(R.CURRENT_MEMBER, R.encode_value(R.CURRENT_MEMBER, cur)) == cur


def test_regex_subscription_follows_the_topics_it_matches():
    meta = FakeMetadata(orders_eu=2, orders_us=2, other=3, __internal=1)
    c, _, _ = make_consumer(meta)
    m1 = Member(c, "m1", [])
    r = heartbeat(c, member_id="m1", epoch=0, topics=None, owned=[], regex="(^orders_.*)")
    m1._apply(r)
    assert r["error_code"] == 0
    assert m1.partitions() == all_of(meta, "orders_eu", "orders_us")
    assert c.consumer_describe("g")["members"][0]["subscribed_topic_regex"] == "(^orders_.*)"
    # a topic created later that matches joins the subscription; others do not
    meta.add("orders_asia", 2)
    meta.add("orders", 1)                     # the whole name must match (no "_" here)
    meta.add("xorders_x", 1)
    m1.beat()
    assert m1.partitions() == all_of(meta, "orders_eu", "orders_us", "orders_asia")
    # a second member by name shares them
    m2 = Member(c, "m2", ["orders_eu", "orders_us", "orders_asia"])
    m2.join()
    settle([m1, m2], check=lambda: no_partition_twice([m1, m2]))
    assert m1.partitions() | m2.partitions() == all_of(meta, "orders_eu", "orders_us",
                                                       "orders_asia")
    assert len(m1.partitions()) == len(m2.partitions()) == 3
    # the subscribed topics protect their offsets from OffsetDelete
    got = Answer()
    c.delete_offsets("g", [("orders_asia", 0), ("other", 0)],
                     lambda code, res: got((code, res)))
    assert got.value[1] == {("orders_asia", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): 0}


def test_metrics_count_consumer_groups_by_state_and_their_rebalances():
    from gregor.broker.group.service import GroupMetrics
    c, _, _ = make_consumer()
    metrics = GroupMetrics()
    metrics.coordinator = c
    c.metrics = metrics
    m1, m2 = Member(c, "m1", ["a"]), Member(c, "m2", ["a"])
    m1.join()
    m2.join()
    families = {f.name: f for f in metrics.collect()}
    states = {s.labels["state"]: s.value for s in families["gregor_consumer_groups"].samples}
    assert states["Reconciling"] == 1 and states["Stable"] == 0
    settle([m1, m2])
    families = {f.name: f for f in metrics.collect()}
    states = {s.labels["state"]: s.value for s in families["gregor_consumer_groups"].samples}
    assert states["Stable"] == 1
    [sample] = [s for s in families["gregor_consumer_group_rebalances"].samples
                if s.name.endswith("_total")]
    assert sample.value == 2


def test_subscription_regexes_run_in_linear_time():
    import time as _time

    from gregor.broker.group import topic_regex
    assert topic_regex.ENGINE == "re2", "google-re2 is a dependency (pyproject.toml)"
    names = ["a" * 249]
    t0 = _time.perf_counter()
    assert topic_regex.matching("(a*)*b", names) == []      # exponential for a backtracker
    assert _time.perf_counter() - t0 < 0.5
    assert topic_regex.matching("(^orders_.*)|(^x)", ["orders_eu", "x", "xy"]) == \
        ["orders_eu", "x"]


def test_an_empty_consumer_group_becomes_classic_for_a_join_keeping_its_offsets():
    c, timers, store = make_consumer()
    m = Member(c, "m1", ["a"])
    m.join()
    got = Answer()
    c.commit("g", 1, "m1", None, {("a", 0): (4, -1, "")}, got)
    m.beat(epoch=-1)
    # a classic member with an id it cannot have: refused, the group untouched
    a = Answer()
    c.join("g", "stale-id", None, "consumer", [("range", b"")], 10000, 10000, "c", "/h",
           True, a)
    assert a["error_code"] == E.UNKNOWN_MEMBER_ID and isinstance(c.groups["g"], ConsumerGroup)
    a = Answer()
    c.join("g", "", None, "consumer", [("range", b"")], 10000, 10000, "c", "/h", False, a)
    assert a["error_code"] == 0 and not isinstance(c.groups["g"], ConsumerGroup)
    assert c.fetch_offsets("g", [("a", 0)])[1][("a", 0)][0] == 4
    # reloaded: a classic group (the consumer group's records were deleted), same offsets
    c2 = reload(c, timers, store)
    assert not isinstance(c2.groups["g"], ConsumerGroup)
    assert c2.fetch_offsets("g", [("a", 0)])[1][("a", 0)][0] == 4


def test_an_unreadable_consumer_group_record_is_skipped_at_load():
    c, timers, store = make_consumer()
    Member(c, "m1", ["a"]).join()
    p = c.partition_of("g")
    store.write(p, [(R.encode_key(R.MEMBER_METADATA, "g", "bad"), b"\x00\x00\xff")],
                lambda code, last: None)
    c2 = reload(c, timers, store)
    assert set(c2.groups["g"].members) == {"m1"}


def test_after_a_failed_write_the_next_one_is_a_snapshot_of_the_group():
    c, timers, store = make_consumer()
    m1, m2, m3 = Member(c, "m1", ["a"]), Member(c, "m2", ["a"]), Member(c, "m3", ["a"])
    m1.join()
    m3.join()
    settle([m1, m3])
    store.fail = E.NOT_ENOUGH_REPLICAS
    assert m2.join()["error_code"] == E.COORDINATOR_NOT_AVAILABLE   # kept in memory
    assert m3.beat(epoch=-1)["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    store.fail = 0
    assert m1.beat()["error_code"] == 0          # nothing changed for m1: the snapshot goes
    before = c.consumer_describe("g")
    c2 = reload(c, timers, store)
    assert c2.consumer_describe("g") == before
    assert set(c2.groups["g"].members) == {"m1", "m2"}
