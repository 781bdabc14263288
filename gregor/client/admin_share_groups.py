"""Share groups in the admin client (Kafka's Admin listGroups(type share), describeShareGroups,
listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroups), as functions of an
AdminClient: each request goes to the group's coordinator, found with FindCoordinator."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..protocol.errors import error_for_code


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    assignment: list = field(default_factory=list)       # [(topic, partition)]


@dataclass
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    members: list


def _call(admin, group: str, api: str, version: int, body: dict, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    node = admin._coordinator(group, deadline)
    return admin._net.request(node, api, body, version, max(0.001, deadline - time.monotonic()))


def list_share_groups(admin, timeout: float = 30.0) -> list[tuple[str, str]]:
    """[(group id, state)] of the share groups (ListGroups v5 with types_filter share)."""
    r = admin._net.request(None, "ListGroups", {"states_filter": [], "types_filter": ["share"]},
                           5, timeout)
    if r["error_code"]:
        raise error_for_code(r["error_code"])
    return sorted((g["group_id"], g["group_state"]) for g in r["groups"])


def describe_share_group(admin, group: str, timeout: float = 30.0) -> ShareGroupDescription:
    r = _call(admin, group, "ShareGroupDescribe", 1,
              {"group_ids": [group], "include_authorized_operations": False}, timeout)
    g = r["groups"][0]
    if g["error_code"]:
        raise error_for_code(g["error_code"], g.get("error_message"))
    members = [ShareMember(m["member_id"], m["client_id"], m["client_host"], m["member_epoch"],
                           [(t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                            for p in t["partitions"]]) for m in g["members"]]
    return ShareGroupDescription(g["group_id"], g["group_state"], g["group_epoch"],
                                 g["assignment_epoch"], members)


def share_group_offsets(admin, group: str, timeout: float = 30.0) -> dict:
    """{(topic, partition): start offset (-1: not started)} (DescribeShareGroupOffsets)."""
    r = _call(admin, group, "DescribeShareGroupOffsets", 0,
              {"groups": [{"group_id": group, "topics": None}]}, timeout)
    g = r["groups"][0]
    if g["error_code"]:
        raise error_for_code(g["error_code"], g.get("error_message"))
    return {(t["topic_name"], p["partition_index"]): p["start_offset"]
            for t in g["topics"] for p in t["partitions"]}


def alter_share_group_offsets(admin, group: str, offsets: dict, timeout: float = 30.0) -> None:
    """offsets: {(topic, partition): start offset}; the group must have no members."""
    topics: dict = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "start_offset": o})
    r = _call(admin, group, "AlterShareGroupOffsets", 0, {"group_id": group, "topics": [
        {"topic_name": t, "partitions": ps} for t, ps in topics.items()]}, timeout)
    if r["error_code"]:
        raise error_for_code(r["error_code"], r.get("error_message"))
    for t in r["responses"]:
        for p in t["partitions"]:
            if p["error_code"]:
                raise error_for_code(p["error_code"],
                                     f"{t['topic_name']}-{p['partition_index']}: "
                                     f"{p.get('error_message') or ''}")


def delete_share_group(admin, group: str, timeout: float = 30.0) -> None:
    r = _call(admin, group, "DeleteGroups", 2, {"groups_names": [group]}, timeout)
    code = r["results"][0]["error_code"]
    if code:
        raise error_for_code(code, f"cannot delete share group {group!r}")


def delete_share_group_offsets(admin, group: str, topics: list[str],
                               timeout: float = 30.0) -> None:
    """The group forgets its state for whole topics (DeleteShareGroupOffsets); the group
    must have no members."""
    r = _call(admin, group, "DeleteShareGroupOffsets", 0, {"group_id": group, "topics": [
        {"topic_name": t} for t in topics]}, timeout)
    if r["error_code"]:
        raise error_for_code(r["error_code"], r.get("error_message"))
    for t in r["responses"]:
        if t["error_code"]:
            raise error_for_code(t["error_code"], t["topic_name"])
