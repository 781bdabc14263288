"""The AdminClient's consumer-group calls (mixed into AdminClient): list and describe groups,
read, reset and delete their committed offsets, delete groups. Each call finds the group's
coordinator (FindCoordinator) and retries while it moves or loads, as Kafka's admin does.

    admin.list_groups()                                  # [GroupListing]
    admin.describe_groups(["orders-app"])                # {id: GroupDescription}
                                       # (KIP-848 groups through ConsumerGroupDescribe)
    admin.list_group_offsets("orders-app")               # {(topic, p): (offset, metadata)}
    admin.alter_group_offsets("orders-app", {("orders", 0): 42})   # the group must be empty
    admin.delete_groups(["orders-app"])
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from ..protocol.errors import ErrorCode, error_for_code
from ..protocol.primitives import DecodeError

_RETRY = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
          ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
_HINTS = {
    ErrorCode.NON_EMPTY_GROUP: "the group still has members: stop its consumers first",
    ErrorCode.UNKNOWN_MEMBER_ID: "the group still has members: stop its consumers first",
    ErrorCode.REBALANCE_IN_PROGRESS: "the group is rebalancing: stop its consumers first",
    ErrorCode.GROUP_ID_NOT_FOUND: "check the name with `gregor groups list`",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "members still read that topic",
}


@dataclass
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = ""          # "classic" or "consumer" (KIP-848), from ListGroups v5+


@dataclass
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]        # decoded for consumer groups, else []


@dataclass
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription] = field(default_factory=list)


def _fail(code: int, what: str):
    hint = _HINTS.get(code)
    base = error_for_code(code)
    return error_for_code(code, f"{what}: {base.message}" + (f" ({hint})" if hint else ""))


class GroupAdminMethods:
    """Needs the AdminClient's _net, _metadata and _timeout."""

    def _coordinator(self, group: str, deadline: float) -> int:
        while True:
            remaining = max(0.001, deadline - time.monotonic())
            self._metadata([], remaining)
            version = min(3, self._net.api_version(None, "FindCoordinator", timeout=remaining)
                          or 0)
            resp = self._net.request(None, "FindCoordinator", {"key": group, "key_type": 0},
                                     version, remaining)
            code = resp.get("error_code", 0)
            if not code:
                return resp["node_id"]
            if code not in _RETRY or time.monotonic() >= deadline:
                raise _fail(code, f"cannot find the coordinator of group {group!r}")
            time.sleep(0.1)

    def _group_call(self, group: str, api: str, max_version: int, body, error_of,
                    timeout: float | None) -> dict:
        deadline = time.monotonic() + self._timeout(timeout)
        while True:
            node = self._coordinator(group, deadline)
            remaining = max(0.001, deadline - time.monotonic())
            version = min(max_version, self._net.api_version(node, api, timeout=remaining) or 0)
            resp = self._net.request(node, api, body(version), version, remaining)
            code = error_of(resp)
            if code in _RETRY and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            if code:
                raise _fail(code, f"{api} for group {group!r} failed")
            return resp

    # -- reading ----------------------------------------------------------------------------
    def list_groups(self, timeout: float | None = None,
                    states: list[str] | None = None) -> list[GroupListing]:
        """Every group of every broker (each coordinates its own), sorted by id."""
        timeout = self._timeout(timeout)
        self._metadata([], timeout)
        out: dict[str, GroupListing] = {}
        for node in list(self._net.metadata.brokers):
            version = min(5, self._net.api_version(node, "ListGroups", timeout=timeout) or 0)
            body = {"states_filter": list(states or ()), "types_filter": []}
            resp = self._net.request(node, "ListGroups", body, version, timeout)
            if resp["error_code"]:
                raise _fail(resp["error_code"], f"cannot list the groups of broker {node}")
            for g in resp["groups"]:
                state = g.get("group_state") or ""
                if states and version < 4 and state.lower() not in {s.lower() for s in states}:
                    continue
                out[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"], state,
                                                  g.get("group_type") or "")
        return [out[k] for k in sorted(out)]

    def _describe_consumer_group(self, gid: str, timeout: float | None
                                 ) -> GroupDescription | None:
        """A KIP-848 group through ConsumerGroupDescribe, when the coordinator serves it;
        None for a classic group (GROUP_ID_NOT_FOUND there), as librdkafka's admin falls
        back to DescribeGroups."""
        deadline = time.monotonic() + self._timeout(timeout)
        node = self._coordinator(gid, deadline)
        remaining = max(0.001, deadline - time.monotonic())
        if self._net.api_version(node, "ConsumerGroupDescribe", timeout=remaining) is None:
            return None

        def error_of(r):
            code = r["groups"][0]["error_code"]
            return 0 if code == ErrorCode.GROUP_ID_NOT_FOUND else code
        resp = self._group_call(gid, "ConsumerGroupDescribe", 0,
                                lambda v: {"group_ids": [gid],
                                           "include_authorized_operations": False},
                                error_of, timeout)
        g = resp["groups"][0]
        if g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        members = [MemberDescription(
            m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
            sorted((t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                   for p in t["partitions"])) for m in g["members"]]
        return GroupDescription(gid, g["group_state"], PROTOCOL_TYPE, g["assignor_name"],
                                members)

    def describe_groups(self, group_ids, timeout: float | None = None
                        ) -> dict[str, GroupDescription]:
        out = {}
        for gid in ([group_ids] if isinstance(group_ids, str) else list(group_ids)):
            described = self._describe_consumer_group(gid, timeout)
            if described is not None:
                out[gid] = described
                continue
            resp = self._group_call(
                gid, "DescribeGroups", 5,
                lambda v, gid=gid: {"groups": [gid], "include_authorized_operations": False},
                lambda r: r["groups"][0]["error_code"], timeout)
            g = resp["groups"][0]
            members = []
            for m in g["members"]:
                parts: list[tuple[str, int]] = []
                if g["protocol_type"] == PROTOCOL_TYPE and m["member_assignment"]:
                    try:
                        parts = sorted(decode_assignment(bytes(m["member_assignment"]))
                                       .partitions)
                    except (DecodeError, UnicodeDecodeError):
                        parts = []
                members.append(MemberDescription(m["member_id"], m.get("group_instance_id"),
                                                 m["client_id"], m["client_host"], parts))
            out[gid] = GroupDescription(gid, g["group_state"], g["protocol_type"],
                                        g["protocol_data"], members)
        return out

    def list_group_offsets(self, group: str, partitions=None, timeout: float | None = None
                           ) -> dict[tuple[str, int], tuple[int, str]]:
        """{(topic, partition): (committed offset, metadata)}; all of the group's when
        partitions is None (partitions without a commit are left out)."""
        topics = None
        if partitions is not None:
            by: dict[str, list[int]] = {}
            for t, p in partitions:
                by.setdefault(t, []).append(int(p))
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by.items()]

        def error_of(r):
            if r.get("error_code"):
                return r["error_code"]
            return next((p["error_code"] for t in r["topics"] for p in t["partitions"]
                         if p["error_code"]), 0)
        resp = self._group_call(group, "OffsetFetch", 7,
                                lambda v: {"group_id": group, "topics": topics,
                                           "require_stable": True}, error_of, timeout)
        return {(t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"] or "")
                for t in resp["topics"] for p in t["partitions"] if p["committed_offset"] >= 0}

    def list_offsets_of_groups(self, group_ids, timeout: float | None = None
                               ) -> dict[str, dict[tuple[str, int], int]]:
        """{group: {(topic, partition): committed offset}} for many groups in few requests:
        one batched FindCoordinator (v4+) and one OffsetFetch per coordinator (v8+, many
        groups per request), as Kafka's admin batches them. Brokers without those versions,
        and groups whose coordinator moved meanwhile, are asked one group at a time."""
        gids = list(group_ids)
        deadline = time.monotonic() + self._timeout(timeout)
        out: dict[str, dict[tuple[str, int], int]] = {}
        one_by_one: list[str] = []
        by_node: dict[int, list[str]] = {}
        self._metadata([], max(0.001, deadline - time.monotonic()))
        if gids and (self._net.api_version(None, "FindCoordinator",
                                           timeout=max(0.001, deadline - time.monotonic()))
                     or 0) >= 4:
            resp = self._net.request(None, "FindCoordinator",
                                     {"key_type": 0, "coordinator_keys": gids}, 4,
                                     max(0.001, deadline - time.monotonic()))
            for c in resp["coordinators"]:
                if c["error_code"]:
                    one_by_one.append(c["key"])
                else:
                    by_node.setdefault(c["node_id"], []).append(c["key"])
        else:
            one_by_one = gids
        for node, node_gids in by_node.items():
            remaining = max(0.001, deadline - time.monotonic())
            if (self._net.api_version(node, "OffsetFetch", timeout=remaining) or 0) < 8:
                one_by_one += node_gids
                continue
            body = {"groups": [{"group_id": g, "member_id": None, "member_epoch": -1,
                                "topics": None} for g in node_gids], "require_stable": False}
            resp = self._net.request(node, "OffsetFetch", body, 8, remaining)
            for g in resp["groups"]:
                if g["error_code"] or any(p["error_code"] for t in g["topics"]
                                          for p in t["partitions"]):
                    one_by_one.append(g["group_id"])
                    continue
                out[g["group_id"]] = {(t["name"], p["partition_index"]): p["committed_offset"]
                                      for t in g["topics"] for p in t["partitions"]
                                      if p["committed_offset"] >= 0}
        for gid in one_by_one:
            remaining = max(0.001, deadline - time.monotonic())
            out[gid] = {tp: o for tp, (o, _) in
                        self.list_group_offsets(gid, None, remaining).items()}
        return {g: out[g] for g in gids if g in out}

    # -- changing ---------------------------------------------------------------------------
    def alter_group_offsets(self, group: str, offsets, timeout: float | None = None) -> None:
        """Set committed offsets ({(topic, partition): offset or (offset, metadata)}). Only
        for a group without members, as Kafka's tools require (live members would overwrite
        them)."""
        by: dict[str, list] = {}
        for (t, p), v in offsets.items():
            off, meta = v if isinstance(v, tuple) else (v, "")
            by.setdefault(t, []).append({"partition_index": int(p), "committed_offset": int(off),
                                         "committed_leader_epoch": -1,
                                         "commit_timestamp": -1, "committed_metadata": meta})
        body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in by.items()]}
        self._group_call(group, "OffsetCommit", 8, lambda v: body,
                         lambda r: next((p["error_code"] for t in r["topics"]
                                         for p in t["partitions"] if p["error_code"]), 0),
                         timeout)

    def delete_group_offsets(self, group: str, partitions, timeout: float | None = None) -> None:
        by: dict[str, list] = {}
        for t, p in partitions:
            by.setdefault(t, []).append({"partition_index": int(p)})

        def error_of(r):
            return r["error_code"] or next((p["error_code"] for t in r["topics"]
                                            for p in t["partitions"] if p["error_code"]), 0)
        self._group_call(group, "OffsetDelete", 0,
                         lambda v: {"group_id": group, "topics": [
                             {"name": t, "partitions": ps} for t, ps in by.items()]},
                         error_of, timeout)

    def delete_groups(self, group_ids, timeout: float | None = None) -> None:
        for gid in ([group_ids] if isinstance(group_ids, str) else list(group_ids)):
            self._group_call(gid, "DeleteGroups", 2, lambda v, gid=gid: {"groups_names": [gid]},
                             lambda r: r["results"][0]["error_code"], timeout)
