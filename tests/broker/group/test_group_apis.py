"""The group APIs through their handlers, at the versions real clients send."""
from __future__ import annotations

import asyncio

from gregor.protocol.errors import ErrorCode as E

from tests.broker.handler_harness import call, run_broker, start_call


async def _topic(b, name="t", partitions=2):
    b.create_topic(name, partitions, {})


def test_join_sync_heartbeat_commit_fetch_leave_old_and_new_versions(tmp_path):
    async def s(b):
        await _topic(b)
        # v0 (no rebalance timeout, no MEMBER_ID_REQUIRED)
        j = await call(b, "JoinGroup", 0, {"group_id": "g", "session_timeout_ms": 10000,
                                           "member_id": "", "protocol_type": "consumer",
                                           "protocols": [{"name": "range", "metadata": b"m"}]})
        assert j["error_code"] == 0 and j["generation_id"] == 1 and j["leader"] == j["member_id"]
        assert j["protocol_name"] == "range"
        m = j["member_id"]
        sy = await call(b, "SyncGroup", 0, {"group_id": "g", "generation_id": 1, "member_id": m,
                                            "assignments": [{"member_id": m,
                                                             "assignment": b"A"}]})
        assert (sy["error_code"], sy["assignment"]) == (0, b"A")
        hb = await call(b, "Heartbeat", 4, {"group_id": "g", "generation_id": 1,
                                            "member_id": m})
        assert hb["error_code"] == 0
        oc = await call(b, "OffsetCommit", 9, {
            "group_id": "g", "generation_id_or_member_epoch": 1, "member_id": m,
            "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_metadata": "x"},
                {"partition_index": 7, "committed_offset": 1, "committed_metadata": None}]},
                {"name": "missing", "partitions": [
                    {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
        codes = {(t["name"], p["partition_index"]): p["error_code"] for t in oc["topics"]
                 for p in t["partitions"]}
        assert codes == {("t", 0): 0, ("t", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                         ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        # OffsetFetch v1 (per partition), v7 (all partitions: null topics), v8 (groups)
        f1 = await call(b, "OffsetFetch", 1, {"group_id": "g", "topics": [
            {"name": "t", "partition_indexes": [0, 1]}]})
        got = {p["partition_index"]: (p["committed_offset"], p["metadata"])
               for p in f1["topics"][0]["partitions"]}
        assert got == {0: (5, "x"), 1: (-1, "")}
        f7 = await call(b, "OffsetFetch", 7, {"group_id": "g", "topics": None,
                                              "require_stable": True})
        assert [(t["name"], [p["committed_offset"] for p in t["partitions"]])
                for t in f7["topics"]] == [("t", [5])]
        f8 = await call(b, "OffsetFetch", 8, {"groups": [
            {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]},
            {"group_id": "other", "topics": None}], "require_stable": False})
        assert f8["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 5
        assert f8["groups"][1] == {"group_id": "other", "topics": [], "error_code": 0}
        d = await call(b, "DescribeGroups", 5, {"groups": ["g"],
                                                "include_authorized_operations": False})
        g = d["groups"][0]
        assert (g["group_state"], g["protocol_data"]) == ("Stable", "range")
        assert g["authorized_operations"] == -2147483648
        assert g["members"][0]["member_assignment"] == b"A"
        lg = await call(b, "ListGroups", 4, {"states_filter": ["stable"]})
        assert [x["group_id"] for x in lg["groups"]] == ["g"]
        lv = await call(b, "LeaveGroup", 5, {"group_id": "g", "members": [
            {"member_id": m, "group_instance_id": None, "reason": "bye"},
            {"member_id": "ghost", "group_instance_id": None}]})
        assert [x["error_code"] for x in lv["members"]] == [0, E.UNKNOWN_MEMBER_ID]
        lv0 = await call(b, "LeaveGroup", 0, {"group_id": "g", "member_id": "ghost"})
        assert lv0["error_code"] == E.UNKNOWN_MEMBER_ID
        dg = await call(b, "DeleteGroups", 2, {"groups_names": ["g"]})
        assert dg["results"] == [{"group_id": "g", "error_code": 0}]
    run_broker(tmp_path, s, group_initial_rebalance_delay_ms=0)


def test_join_v4_requires_member_id_and_waits_for_rebalance(tmp_path):
    async def s(b):
        body = {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 60000,
                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"m"}]}
        first = await call(b, "JoinGroup", 5, body)
        assert first["error_code"] == E.MEMBER_ID_REQUIRED and first["member_id"]
        second = await call(b, "JoinGroup", 5, {**body, "member_id": first["member_id"]})
        assert second["error_code"] == 0 and second["generation_id"] == 1
        # a second member: its join waits until the first rejoins
        other = await call(b, "JoinGroup", 7, {**body, "reason": None})
        pending = start_call(b, "JoinGroup", 7, {**body, "member_id": other["member_id"],
                                                 "reason": None})
        await asyncio.sleep(0.05)
        assert not pending.done()
        again = await call(b, "JoinGroup", 5, {**body, "member_id": first["member_id"]})
        r = await pending
        assert again["generation_id"] == r["generation_id"] == 2
        assert r["protocol_type"] == "consumer"
    run_broker(tmp_path, s, group_initial_rebalance_delay_ms=0)


def test_offsets_survive_a_restart(tmp_path):
    async def commit(b):
        await _topic(b)
        r = await call(b, "OffsetCommit", 2, {
            "group_id": "solo", "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                {"partition_index": 1, "committed_offset": 42, "committed_metadata": "m"}]}]})
        assert r["topics"][0]["partitions"][0]["error_code"] == 0

    async def fetch(b):
        b.groups.load_existing()
        r = await call(b, "OffsetFetch", 3, {"group_id": "solo", "topics": [
            {"name": "t", "partition_indexes": [1]}]})
        p = r["topics"][0]["partitions"][0]
        assert (p["committed_offset"], p["metadata"]) == (42, "m")
    run_broker(tmp_path, commit)
    run_broker(tmp_path, fetch)
