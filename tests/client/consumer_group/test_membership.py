"""The membership state machine with a fake clock and canned coordinator answers: the happy
path (leader and follower), and every error path the Java consumer handles."""
from __future__ import annotations

import pytest

from gregor.client.consumer.group.membership import (
    ASSIGNING, COORDINATOR, REVOKING, STABLE, SYNCING, UNJOINED, CommitFailedError,
    GroupSettings, Membership, Op)
from gregor.protocol.consumer_protocol import (Assignment, Subscription, decode_assignment,
                                               decode_subscription, encode_assignment,
                                               encode_subscription)
from gregor.protocol.errors import ErrorCode as E

GROUP = "g"


def settings(**kw):
    base = dict(group_id=GROUP, strategies=["range", "roundrobin"], session_timeout_ms=10000,
                rebalance_timeout_ms=60000, heartbeat_interval_ms=1000, retry_backoff_ms=100)
    base.update(kw)
    return GroupSettings(**base)


def one(reqs, api):
    got = [r for r in reqs if r.api == api]
    assert len(got) == 1, [r.api for r in reqs]
    return got[0]


def find(m, now=0):
    req = one(m.poll(now), "FindCoordinator")
    assert req.body["key"] == GROUP
    m.on_response(req, {"error_code": 0, "node_id": 7, "host": "h", "port": 1}, None, now)
    assert m.coordinator == 7


def join_ok(m, req, *, member="m1", leader="m1", generation=1, members=None, now=0):
    body = {"error_code": 0, "generation_id": generation, "protocol_name": "range",
            "leader": leader, "member_id": member, "members": members or []}
    m.on_response(req, body, None, now)


def meta(topics):
    return {"brokers": [], "topics": [
        {"name": t, "error_code": 0, "is_internal": False,
         "partitions": [{"partition_index": i} for i in range(n)]} for t, n in topics.items()]}


def to_stable_follower(m, now=0, assignment=(("t", 0), ("t", 1))):
    m.subscribe(["t"], now_ms=now)
    find(m, now)
    join = one(m.poll(now), "JoinGroup")
    join_ok(m, join, member="m2", leader="m1", now=now)
    sync = one(m.poll(now), "SyncGroup")
    assert sync.body["assignments"] == []
    m.on_response(sync, {"error_code": 0, "assignment": encode_assignment(
        Assignment(list(assignment)))}, None, now)
    assert m.state == STABLE
    ev = m.events.pop()
    assert ev.kind == "assign" and ev.partitions == sorted(assignment)


def test_leader_joins_assigns_and_heartbeats():
    m = Membership(settings())
    m.subscribe(["t"])
    find(m)
    join = one(m.poll(0), "JoinGroup")
    assert join.dest == COORDINATOR and join.body["member_id"] == ""
    assert [p["name"] for p in join.body["protocols"]] == ["range", "roundrobin"]
    assert decode_subscription(join.body["protocols"][0]["metadata"]).topics == ["t"]
    # KIP-394: the coordinator hands out a member id first
    m.on_response(join, {"error_code": E.MEMBER_ID_REQUIRED, "member_id": "m1",
                         "generation_id": -1, "protocol_name": "", "leader": "",
                         "members": []}, None, 0)
    join = one(m.poll(0), "JoinGroup")
    assert join.body["member_id"] == "m1"
    other = encode_subscription(Subscription(["t"]))
    mine = join.body["protocols"][0]["metadata"]
    join_ok(m, join, members=[{"member_id": "m1", "metadata": mine},
                              {"member_id": "m2", "metadata": other}])
    assert m.state == ASSIGNING
    md = one(m.poll(0), "Metadata")
    assert md.body["topics"] == [{"name": "t"}]
    m.on_response(md, meta({"t": 4}), None, 0)
    sync = one(m.poll(0), "SyncGroup")
    plan = {a["member_id"]: decode_assignment(a["assignment"]).partitions
            for a in sync.body["assignments"]}
    assert plan == {"m1": [("t", 0), ("t", 1)], "m2": [("t", 2), ("t", 3)]}
    m.on_response(sync, {"error_code": 0, "assignment": encode_assignment(
        Assignment(plan["m1"]))}, None, 0)
    assert m.state == STABLE and m.events[-1].partitions == [("t", 0), ("t", 1)]
    assert not [r for r in m.poll(500) if r.api == "Heartbeat"]
    hb = one(m.poll(1000), "Heartbeat")
    assert hb.body["generation_id"] == 1 and hb.body["member_id"] == "m1"
    m.on_response(hb, {"error_code": 0}, None, 1001)
    assert m.state == STABLE


def test_rebalance_in_progress_revokes_then_rejoins_with_same_member():
    m = Membership(settings())
    to_stable_follower(m)
    m.poll_tick(1000)
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, {"error_code": E.REBALANCE_IN_PROGRESS}, None, 1000)
    assert not [r for r in m.poll(1000) if r.api == "JoinGroup"]
    assert m.state == REVOKING and m.events[-1].kind == "revoke"
    assert m.events[-1].partitions == [("t", 0), ("t", 1)]
    # commits still go out while revoking (the revoke callback commits)
    got = []
    m.add_op(Op("commit", {("t", 0): 5}, lambda r, e: got.append((r, e)), 10 ** 9))
    commit = one(m.poll(1000), "OffsetCommit")
    assert commit.body["generation_id_or_member_epoch"] == 1
    m.on_response(commit, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0}]}]}, None, 1000)
    assert got == [({("t", 0): 5}, None)]
    # the application is slow to poll: heartbeats keep its session alive meanwhile
    hb = one(m.poll(2100), "Heartbeat")
    m.on_response(hb, {"error_code": E.REBALANCE_IN_PROGRESS}, None, 2100)
    assert m.state == REVOKING and m.generation == 1
    m.revoke_done()
    join = one(m.poll(2100), "JoinGroup")
    assert join.body["member_id"] == "m2"


@pytest.mark.parametrize("code", [E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID])
def test_fenced_heartbeat_loses_partitions(code):
    m = Membership(settings())
    to_stable_follower(m)
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, {"error_code": code}, None, 1000)
    m.poll(1000)
    assert m.state == REVOKING and m.events[-1].kind == "lost"
    assert m.generation == -1
    assert (m.member_id == "") == (code == E.UNKNOWN_MEMBER_ID)
    m.revoke_done()
    assert one(m.poll(1000), "JoinGroup").body["member_id"] == m.member_id


@pytest.mark.parametrize("code", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_moved_is_found_again_keeping_the_assignment(code):
    m = Membership(settings())
    to_stable_follower(m)
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, {"error_code": code}, None, 1000)
    assert m.coordinator is None and m.state == STABLE
    find(m, 1000)
    assert m.assigned == [("t", 0), ("t", 1)]
    assert one(m.poll(2000), "Heartbeat").body["generation_id"] == 1


def test_lost_connection_during_join_finds_coordinator_and_rejoins():
    m = Membership(settings())
    m.subscribe(["t"])
    find(m)
    join = one(m.poll(0), "JoinGroup")
    m.on_response(join, None, ConnectionError("gone"), 0)
    assert m.coordinator is None
    find(m, 10)
    assert one(m.poll(10), "JoinGroup")


def test_sync_errors():
    m = Membership(settings())
    m.subscribe(["t"])
    find(m)
    join_ok(m, one(m.poll(0), "JoinGroup"), member="m2", leader="m1")
    sync = one(m.poll(0), "SyncGroup")
    m.on_response(sync, {"error_code": E.REBALANCE_IN_PROGRESS, "assignment": b""}, None, 0)
    assert m.state == UNJOINED
    join_ok(m, one(m.poll(0), "JoinGroup"), member="m2", leader="m1", generation=2)
    sync = one(m.poll(0), "SyncGroup")
    m.on_response(sync, {"error_code": E.UNKNOWN_MEMBER_ID, "assignment": b""}, None, 0)
    assert m.member_id == "" and m.state == UNJOINED
    assert one(m.poll(200), "JoinGroup").body["member_id"] == ""


def test_stale_answers_are_ignored():
    m = Membership(settings())
    to_stable_follower(m)
    hb = one(m.poll(1000), "Heartbeat")
    m.subscribe(["t", "u"], now_ms=1000)       # subscription change: rejoin
    m.on_response(hb, {"error_code": E.ILLEGAL_GENERATION}, None, 1000)
    assert m.generation == 1                    # the old heartbeat's answer changes nothing


def test_session_without_heartbeat_marks_coordinator_dead():
    m = Membership(settings())
    to_stable_follower(m)
    m.poll_tick(11000)
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, None, TimeoutError("no answer"), 9000)
    assert m.coordinator is None and m.state == STABLE


def test_max_poll_interval_leaves_and_rejoins_on_next_poll():
    m = Membership(settings())
    to_stable_follower(m)
    reqs = m.poll(60001)
    leave = one(reqs, "LeaveGroup")
    assert leave.body["members"][0]["member_id"] == "m2"
    assert m.member_id == "" and m.generation == -1 and m.poll_expired
    assert not [r for r in m.poll(70000) if r.api == "JoinGroup"]
    m.poll_tick(70000)
    m.poll(70000)
    assert m.events[-1].kind == "lost"
    m.revoke_done()
    assert one(m.poll(70000), "JoinGroup").body["member_id"] == ""


def test_static_member_never_sends_leave():
    m = Membership(settings(instance_id="i-1"))
    to_stable_follower(m)
    assert one(m.poll(1000), "Heartbeat").body["group_instance_id"] == "i-1"
    m.close()
    assert not [r for r in m.poll(1000) if r.api == "LeaveGroup"]


def test_dynamic_member_leaves_on_close():
    m = Membership(settings())
    to_stable_follower(m)
    m.close()
    assert one(m.poll(1000), "LeaveGroup").body["member_id"] == "m2"


@pytest.mark.parametrize("code", [E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                  E.FENCED_INSTANCE_ID])
def test_fatal_join_errors_reach_the_application(code):
    m = Membership(settings())
    m.subscribe(["t"])
    find(m)
    m.on_response(one(m.poll(0), "JoinGroup"), {"error_code": code, "member_id": "",
                                                 "generation_id": -1, "protocol_name": "",
                                                 "leader": "", "members": []}, None, 0)
    assert m.events[-1].kind == "error" and m.fatal.code == code
    assert not [r for r in m.poll(10 ** 6) if r.api == "JoinGroup"]


def test_commit_errors():
    m = Membership(settings())
    to_stable_follower(m)
    got = []
    m.add_op(Op("commit", {("t", 0): 1}, lambda r, e: got.append(e), 10 ** 9))
    c = one(m.poll(100), "OffsetCommit")
    m.on_response(c, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": E.NOT_COORDINATOR}]}]}, None, 100)
    assert m.coordinator is None and not got
    find(m, 300)
    c = one(m.poll(300), "OffsetCommit")      # sent again to the new coordinator
    m.on_response(c, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": E.ILLEGAL_GENERATION}]}]}, None, 300)
    assert isinstance(got[0], CommitFailedError) and m.generation == -1
    # out of the group: commits fail at once
    m.add_op(Op("commit", {("t", 0): 1}, lambda r, e: got.append(e), 10 ** 9))
    assert not [r for r in m.poll(400) if r.api == "OffsetCommit"]
    assert isinstance(got[1], CommitFailedError)


def test_offset_fetch_retries_unstable_and_reports_missing_as_none():
    m = Membership(settings())
    to_stable_follower(m)
    got = []
    m.add_op(Op("fetch", [("t", 0), ("t", 1)], lambda r, e: got.append((r, e)), 10 ** 9))
    f = one(m.poll(100), "OffsetFetch")
    assert f.body["require_stable"] is True
    m.on_response(f, {"error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": -1, "metadata": None,
         "error_code": E.UNSTABLE_OFFSET_COMMIT}]}]}, None, 100)
    assert not got and not [r for r in m.poll(150) if r.api == "OffsetFetch"]
    f = one(m.poll(200), "OffsetFetch")
    m.on_response(f, {"error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 42, "metadata": "", "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "metadata": "", "error_code": 0}]}]},
        None, 200)
    assert got == [({("t", 0): 42, ("t", 1): None}, None)]


def test_op_times_out():
    m = Membership(settings())
    got = []
    m.add_op(Op("fetch", [("t", 0)], lambda r, e: got.append(e), 500))
    m.poll(0)                                    # FindCoordinator, never answered
    m.poll(600)
    assert got and got[0].code == E.REQUEST_TIMED_OUT


def test_pattern_resolved_before_join_and_new_topic_rejoins():
    m = Membership(settings(metadata_max_age_ms=1000))
    m.subscribe(pattern="^ev.*")
    reqs = m.poll(0)
    md = one(reqs, "Metadata")
    m.on_response(one(reqs, "FindCoordinator"), {"error_code": 0, "node_id": 7, "host": "h",
                                                  "port": 1}, None, 0)
    assert not [r for r in m.poll(0) if r.api == "JoinGroup"]
    assert md.body["topics"] is None
    m.on_response(md, meta({"events": 2, "other": 1}), None, 0)
    join = one(m.poll(0), "JoinGroup")
    assert decode_subscription(join.body["protocols"][0]["metadata"]).topics == ["events"]
    join_ok(m, join, member="m2", leader="m1")
    m.on_response(one(m.poll(0), "SyncGroup"), {"error_code": 0, "assignment": b""}, None, 0)
    m.events.clear()
    m.poll_tick(1500)
    md = one(m.poll(1500), "Metadata")
    m.on_response(md, meta({"events": 2, "events2": 1}), None, 1500)
    assert m.state == UNJOINED and m.topics == ["events", "events2"]


def test_leader_rejoins_when_partitions_are_added():
    m = Membership(settings(metadata_max_age_ms=1000))
    m.subscribe(["t"])
    find(m)
    join = one(m.poll(0), "JoinGroup")
    join_ok(m, join, members=[{"member_id": "m1",
                               "metadata": join.body["protocols"][0]["metadata"]}])
    m.on_response(one(m.poll(0), "Metadata"), meta({"t": 2}), None, 0)
    m.on_response(one(m.poll(0), "SyncGroup"), {"error_code": 0, "assignment": encode_assignment(
        Assignment([("t", 0), ("t", 1)]))}, None, 0)
    m.poll_tick(1000)
    md = one(m.poll(1000), "Metadata")
    m.on_response(md, meta({"t": 3}), None, 1000)
    assert m.state == UNJOINED
    m.poll(1000)
    assert m.state == REVOKING


def test_sync_state_machine_between_join_and_sync():
    m = Membership(settings())
    m.subscribe(["t"])
    find(m)
    join_ok(m, one(m.poll(0), "JoinGroup"), member="m2", leader="m1")
    assert m.state == SYNCING


def test_cooperative_rejoins_keeping_partitions_and_revokes_only_what_moves():
    m = Membership(settings(strategies=["cooperative-sticky"]))
    to_stable_follower(m, assignment=[("t", 0), ("t", 1), ("t", 2), ("t", 3)])
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, {"error_code": E.REBALANCE_IN_PROGRESS}, None, 1000)
    join = one(m.poll(1000), "JoinGroup")          # no revoke first
    assert not m.events and m.assigned == [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    sub = decode_subscription(join.body["protocols"][0]["metadata"])
    assert sub.owned_partitions == m.assigned and sub.generation_id == 1
    join_ok(m, join, member="m2", leader="m1", generation=2)
    sync = one(m.poll(1000), "SyncGroup")
    m.on_response(sync, {"error_code": 0, "assignment": encode_assignment(
        Assignment([("t", 0), ("t", 1)]))}, None, 1000)
    assert [(e.kind, e.partitions) for e in m.events] == [("revoke", [("t", 2), ("t", 3)])]
    assert m.state == REVOKING
    m.events.clear()
    m.revoke_done()
    join = one(m.poll(1000), "JoinGroup")          # the second rebalance
    assert decode_subscription(join.body["protocols"][0]["metadata"]).owned_partitions == \
        [("t", 0), ("t", 1)]
    join_ok(m, join, member="m2", leader="m1", generation=3)
    m.on_response(one(m.poll(1000), "SyncGroup"), {"error_code": 0, "assignment":
                  encode_assignment(Assignment([("t", 0), ("t", 1)]))}, None, 1000)
    assert m.state == STABLE and not m.events


def test_cooperative_lost_partitions_are_all_given_up():
    m = Membership(settings(strategies=["cooperative-sticky"]))
    to_stable_follower(m)
    hb = one(m.poll(1000), "Heartbeat")
    m.on_response(hb, {"error_code": E.UNKNOWN_MEMBER_ID}, None, 1000)
    m.poll(1000)
    assert m.events[-1].kind == "lost" and m.events[-1].partitions == [("t", 0), ("t", 1)]


def test_nothing_to_do_means_no_busy_wakeups():
    m = Membership(settings())
    assert m.next_wakeup(0) >= 100                 # not subscribed, no ops
    m.subscribe(["t"])
    m.poll(0)                                      # FindCoordinator in flight
    assert m.next_wakeup(0) >= 100
    to_stable_follower(Membership(settings()))
