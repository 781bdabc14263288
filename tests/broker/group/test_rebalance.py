"""The classic rebalance protocol, driven through the coordinator with a fake clock."""
from __future__ import annotations

from gregor.protocol.errors import ErrorCode as E

from .fakes import Answer, make

PROTO = [("range", b"sub-range"), ("roundrobin", b"sub-rr")]


def join(c, group="g", member="", instance=None, protocols=PROTO, session=10000,
         rebalance=30000, v4=True):
    a = Answer()
    c.join(group, member, instance, "consumer", protocols, session, rebalance, "client",
           "/127.0.0.1", require_known_member_id=v4, respond=a)
    return a


def join_new(c, **kw):
    """A dynamic member's two-step join (MEMBER_ID_REQUIRED, then with the id)."""
    first = join(c, **kw)
    assert first["error_code"] == E.MEMBER_ID_REQUIRED
    return join(c, member=first["member_id"], **kw)


def sync(c, member, generation, assignments=None, group="g", instance=None):
    a = Answer()
    c.sync(group, generation, member, instance, "consumer", None, assignments or {}, a)
    return a


def stable_group(c, n=1):
    ids = [join(c)["member_id"] for _ in range(n)]      # MEMBER_ID_REQUIRED: pending members
    answers = [join(c, member=m) for m in ids]          # completes once all have joined
    assert all(a["error_code"] == E.NONE for a in answers)
    c_members = [a["member_id"] for a in answers]
    leader = answers[0]["leader"]
    gen = answers[0]["generation_id"]
    syncs = {m: sync(c, m, gen, {x: f"assign-{x}".encode() for x in c_members}
                     if m == leader else None) for m in c_members}
    return c_members, leader, gen, syncs


def test_member_id_required_then_single_member_group_becomes_stable():
    c, _, _ = make()
    first = join(c)
    assert first["error_code"] == E.MEMBER_ID_REQUIRED and first["member_id"]
    a = join(c, member=first["member_id"])
    assert a["error_code"] == E.NONE and a["generation_id"] == 1
    assert a["leader"] == a["member_id"] and a["protocol_name"] == "range"
    assert [m["member_id"] for m in a["members"]] == [a["member_id"]]
    assert a["members"][0]["metadata"] == b"sub-range"
    s = sync(c, a["member_id"], 1, {a["member_id"]: b"mine"})
    assert s["error_code"] == E.NONE and s["assignment"] == b"mine"
    assert c.describe("g")["group_state"] == "Stable"


def test_old_join_versions_get_an_id_without_member_id_required():
    c, _, _ = make()
    a = join(c, v4=False)
    assert a["error_code"] == E.NONE and a["member_id"] and a["generation_id"] == 1


def test_second_member_triggers_rebalance_and_follower_sync_waits_for_leader():
    c, _, _ = make()
    (m1,), leader, gen, _ = stable_group(c)
    first = join(c)
    j2 = join(c, member=first["member_id"])
    assert not j2.done                                  # waits for m1 to rejoin
    assert c.heartbeat("g", gen, m1, None) == E.REBALANCE_IN_PROGRESS
    j1 = join(c, member=m1)
    assert j1.done and j2.done
    assert j1["generation_id"] == j2["generation_id"] == gen + 1
    assert j1["leader"] == m1 and len(j1["members"]) == 2 and j2["members"] == []
    s2 = sync(c, j2["member_id"], gen + 1)
    assert not s2.done
    s1 = sync(c, m1, gen + 1, {m1: b"a1", j2["member_id"]: b"a2"})
    assert s1["assignment"] == b"a1" and s2["assignment"] == b"a2"
    assert c.heartbeat("g", gen + 1, m1, None) == E.NONE


def test_silent_member_expires_after_session_timeout_and_group_rebalances():
    c, t, _ = make()
    (m1, m2), leader, gen, _ = stable_group(c, 2)
    t.advance(6000)
    assert c.heartbeat("g", gen, m1, None) == E.NONE     # m1 alive, m2 silent
    t.advance(5000)                                      # m2's 10 s session is over
    assert c.heartbeat("g", gen, m2, None) == E.UNKNOWN_MEMBER_ID
    assert c.heartbeat("g", gen, m1, None) == E.REBALANCE_IN_PROGRESS
    j = join(c, member=m1)
    assert j["generation_id"] == gen + 1 and [m["member_id"] for m in j["members"]] == [m1]


def test_member_not_rejoining_within_rebalance_timeout_is_dropped():
    c, t, _ = make()
    (m1, m2), _, gen, _ = stable_group(c, 2)
    j1 = join(c, member=m1, rebalance=5000)               # m1 rejoins; m2 never does
    assert not j1.done
    t.advance(4000)
    c.heartbeat("g", gen, m2, None)                      # heartbeats do not count as a join
    t.advance(31000)
    assert j1.done and j1["generation_id"] == gen + 1
    assert [m["member_id"] for m in j1["members"]] == [m1]


def test_leader_leaving_elects_a_new_leader_among_rejoined_members():
    c, _, _ = make()
    (m1, m2), leader, gen, _ = stable_group(c, 2)
    assert leader == m1
    code, results = c.leave("g", [(m1, None)])
    assert code == E.NONE and results == [(m1, None, E.NONE)]
    j2 = join(c, member=m2)
    assert j2["leader"] == m2 and j2["generation_id"] == gen + 1


def test_last_member_leaving_empties_the_group():
    c, _, _ = make()
    (m1,), _, gen, _ = stable_group(c)
    c.leave("g", [(m1, None)])
    d = c.describe("g")
    assert d["group_state"] == "Empty" and d["members"] == []
    assert c.heartbeat("g", gen, m1, None) == E.UNKNOWN_MEMBER_ID


def test_static_member_restart_takes_over_without_rebalance():
    c, _, _ = make()
    a = join(c, instance="host-1")           # static members get an id at once
    assert a["error_code"] == E.NONE
    old = a["member_id"]
    s = sync(c, old, 1, {old: b"p0,p1"}, instance="host-1")
    assert s["assignment"] == b"p0,p1"
    again = join(c, instance="host-1")       # restarted: unknown member id, same instance
    assert again["error_code"] == E.NONE and again["member_id"] != old
    assert again["generation_id"] == 1      # no rebalance
    s2 = sync(c, again["member_id"], 1, instance="host-1")
    assert s2["assignment"] == b"p0,p1"
    assert c.heartbeat("g", 1, old, "host-1") == E.FENCED_INSTANCE_ID
    assert c.describe("g")["group_state"] == "Stable"


def test_static_member_leave_by_instance_id():
    c, _, _ = make()
    a = join(c, instance="i1")
    code, results = c.leave("g", [("", "i1")])
    assert results == [(a["member_id"], "i1", E.NONE)]
    code, results = c.leave("g", [("someone-else", "i1")])
    assert results == [("someone-else", "i1", E.UNKNOWN_MEMBER_ID)]


def test_session_timeout_bounds_and_protocol_checks():
    c, _, _ = make(min_session_timeout_ms=6000, max_session_timeout_ms=60000)
    assert join(c, session=1000)["error_code"] == E.INVALID_SESSION_TIMEOUT
    assert join(c, session=70000)["error_code"] == E.INVALID_SESSION_TIMEOUT
    stable_group(c)
    assert join(c, protocols=[("sticky", b"x")])["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_empty_group_accepts_any_protocol():
    c, _, _ = make()
    (m1,), _, _, _ = stable_group(c)
    c.leave("g", [(m1, None)])
    a = join_new(c, protocols=[("roundrobin", b"rr-only")])
    assert a["error_code"] == E.NONE and a["protocol_name"] == "roundrobin"


def test_protocol_chosen_by_votes_among_common_protocols():
    c, _, _ = make()
    a = join(c, v4=False, protocols=[("roundrobin", b"1"), ("range", b"1")])
    b = join(c, v4=False, protocols=[("range", b"2"), ("roundrobin", b"2")])
    # b's join moves the group to rebalance; a must rejoin
    j = join(c, member=a["member_id"], protocols=[("range", b"1"), ("roundrobin", b"1")])
    assert j["protocol_name"] == "range"


def test_generation_and_member_fencing():
    c, _, _ = make()
    (m1,), _, gen, _ = stable_group(c)
    assert c.heartbeat("g", gen + 5, m1, None) == E.ILLEGAL_GENERATION
    assert c.heartbeat("g", gen, "nobody", None) == E.UNKNOWN_MEMBER_ID
    assert c.heartbeat("nogroup", gen, m1, None) == E.UNKNOWN_MEMBER_ID
    assert sync(c, m1, gen + 1)["error_code"] == E.ILLEGAL_GENERATION
    assert sync(c, "nobody", gen)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert join(c, member="nobody")["error_code"] == E.UNKNOWN_MEMBER_ID
    assert join(c, group="fresh", member="nobody")["error_code"] == E.UNKNOWN_MEMBER_ID
    assert join(c, group="")["error_code"] == E.INVALID_GROUP_ID


def test_rejoin_during_completing_rebalance_gets_the_same_answer():
    c, _, _ = make()
    a = join_new(c)
    again = join(c, member=a["member_id"])
    assert again["generation_id"] == a["generation_id"] and again["members"] == a["members"]


def test_members_that_never_sync_are_removed():
    c, t, _ = make()
    a = join_new(c, rebalance=5000)
    t.advance(5001)
    assert c.heartbeat("g", a["generation_id"], a["member_id"], None) == E.UNKNOWN_MEMBER_ID


def test_initial_rebalance_delay_waits_for_more_members():
    c, t, _ = make(initial_rebalance_delay_ms=3000)
    a = join(c, v4=False)
    assert not a.done
    t.advance(2000)
    b = join(c, v4=False)
    t.advance(1500)                     # the delay was extended by b's arrival (to 6 s)
    assert not a.done
    t.advance(2000)
    assert not a.done
    t.advance(600)
    assert a.done and b.done and a["generation_id"] == b["generation_id"] == 1
    assert len(a["members"]) + len(b["members"]) == 2


def test_group_max_size():
    c, _, _ = make(max_size=1)
    stable_group(c)
    assert join(c)["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_store_failure_of_the_assignment_fails_sync_and_rebalances():
    c, _, store = make()
    a = join_new(c)
    store.fail = E.NOT_LEADER_OR_FOLLOWER
    s = sync(c, a["member_id"], 1, {a["member_id"]: b"x"})
    assert s["error_code"] == E.NOT_COORDINATOR
    assert c.describe("g")["group_state"] == "PreparingRebalance"


def test_describe_and_list():
    c, _, _ = make()
    (m1,), _, _, _ = stable_group(c)
    d = c.describe("g")
    assert d["protocol_type"] == "consumer" and d["protocol_data"] == "range"
    assert d["members"][0]["member_assignment"] == f"assign-{m1}".encode()
    assert d["members"][0]["client_host"] == "/127.0.0.1"
    assert c.describe("unknown")["group_state"] == "Dead"
    assert [g["group_id"] for g in c.list_groups()] == ["g"]
    assert c.list_groups({"Empty"}) == []
    assert c.groups_by_state()["Stable"] == 1


def test_delete_groups():
    c, _, _ = make()
    stable_group(c)
    a = Answer()
    c.delete_groups(["g", "nothing"], a)
    assert a.value == {"g": E.NON_EMPTY_GROUP, "nothing": E.GROUP_ID_NOT_FOUND}
    (m1,) = list(c.groups["g"].members)
    c.leave("g", [(m1, None)])
    a = Answer()
    c.delete_groups(["g"], a)
    assert a.value == {"g": E.NONE} and "g" not in c.groups


def test_not_coordinator_for_unowned_partitions():
    c, _, _ = make()
    c.unload_partition(c.partition_of("g"))
    assert join(c)["error_code"] == E.NOT_COORDINATOR
    assert c.heartbeat("g", 1, "m", None) == E.NOT_COORDINATOR
