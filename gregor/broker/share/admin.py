"""Share groups in the group admin APIs: ListGroups (type "share"), DeleteGroups (an empty
share group goes with its share-partition state), and what DescribeGroups answers for them.
On one node the state is the local store's; on a cluster DeleteGroups and the offset APIs
go to the share coordinators (share/admin_cluster.py)."""
from __future__ import annotations

from typing import Callable

from ...protocol.errors import ErrorCode
from . import admin_cluster

E = ErrorCode


def is_share_group(service, group_id: str) -> bool:
    return service is not None and group_id in service.groups()


def list_groups(service, states: set, types: set) -> list[dict]:
    if service is None:
        return []
    states = {s.lower() for s in states or ()}
    types = {t.lower() for t in types or ()}
    if types and "share" not in types:
        return []
    out = []
    for gid in sorted(service.groups()):
        group = service.membership.groups.get(gid)
        state = group.state if group is not None else "Empty"
        if states and state.lower() not in states:
            continue
        out.append({"group_id": gid, "protocol_type": "share", "group_state": state,
                    "group_type": "share"})
    return out


def describe_classic(group_id: str) -> dict:
    """DescribeGroups is for classic groups; Kafka answers GROUP_ID_NOT_FOUND for others."""
    return {"error_code": E.GROUP_ID_NOT_FOUND, "group_id": group_id, "group_state": "Dead",
            "protocol_type": "", "protocol_data": "", "members": []}


def delete_groups(service, group_ids: list[str], respond: Callable[[dict], None]) -> None:
    """{group id: error} once the deleted groups' state tombstones are written."""
    if service.broker.cluster is not None:
        return admin_cluster.delete_groups(service, group_ids, respond)
    results: dict = {}
    keys = []
    members = []            # groups whose membership records' tombstones are written
    for gid in group_ids:
        results[gid] = E.NONE
        if gid in service.membership.groups:
            members.append(gid)
        else:
            keys += [k for k in service.known_partitions(gid)]
    left = [len(keys) + len(members)]
    if not left[0]:
        respond(results)
        return

    def one(gid, code):
        if code:
            results[gid] = code
        left[0] -= 1
        if left[0] == 0:
            respond(results)

    def deleted(gid, code):
        if not code:
            # then its share-partitions' state, each answered on its own
            mine = service.known_partitions(gid)
            left[0] += len(mine)
            for key in mine:
                service.delete_state(key, lambda c, g=gid: one(g, c))
        one(gid, code)
    for gid in members:
        code = service.membership.delete(gid, lambda c, g=gid: deleted(g, c))
        if code:
            one(gid, code)
    for key in keys:
        service.delete_state(key, lambda code, k=key: one(k[0], code))


# -- share-group offsets (kafka-share-groups.sh --describe / --reset-offsets / --delete) -------

def describe_offsets(service, group_id: str, topics, topic_allowed) -> dict:
    """One group of a DescribeShareGroupOffsets response. topics None: every share-partition
    the group has state for. A partition not started yet answers start offset -1."""
    if group_id not in service.groups():
        return {"group_id": group_id, "topics": [], "error_code": E.GROUP_ID_NOT_FOUND,
                "error_message": f"Share group {group_id} not found."}
    wanted: dict = {}
    if topics is None:
        for _g, tid, p in service.known_partitions(group_id):
            name = service.topic_name(tid)
            if name is not None:
                wanted.setdefault(name, []).append(p)
    else:
        for t in topics:
            wanted.setdefault(t["topic_name"], []).extend(t["partitions"])
    out = []
    for name, parts in wanted.items():
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        entries = []
        for p in sorted(set(parts)):
            code = E.NONE if topic_allowed(name) else E.TOPIC_AUTHORIZATION_FAILED
            if code == E.NONE and (meta is None or not 0 <= p < meta[1]):
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            start = service.start_offset((group_id, tid, p)) if code == E.NONE else None
            entries.append({"partition_index": p, "start_offset": -1 if start is None else start,
                            "leader_epoch": -1, "error_code": code, "error_message": None})
        out.append({"topic_name": name, "topic_id": tid, "partitions": entries})
    return {"group_id": group_id, "topics": out, "error_code": E.NONE, "error_message": None}


def _not_empty(service, group_id: str) -> bool:
    group = service.membership.groups.get(group_id)
    return group is not None and bool(group.members)


def alter_offsets(service, broker, group_id: str, topics, topic_allowed,
                  respond: Callable[[dict], None]) -> None:
    """AlterShareGroupOffsets: each named share-partition starts again at its offset, with
    nothing in flight (only while the group has no members: NON_EMPTY_GROUP otherwise)."""
    if service.broker.cluster is not None:
        return admin_cluster.alter_offsets(service, broker, group_id, topics, topic_allowed,
                                           respond)
    if _not_empty(service, group_id):
        return respond({"error_code": E.NON_EMPTY_GROUP,
                        "error_message": f"Share group {group_id} has members; stop them "
                                         f"first.", "responses": []})
    out, keys = [], []
    for t in topics:
        name = t["topic_name"]
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        entries = []
        for part in t["partitions"]:
            p, offset = part["partition_index"], part["start_offset"]
            code, message = E.NONE, None
            partition = broker.replica_manager.get(name, p) if meta else None
            if not topic_allowed(name):
                code = E.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            elif not partition.log.log_start_offset <= offset <= partition.high_watermark:
                code, message = E.INVALID_REQUEST, (
                    f"offset {offset} is outside [{partition.log.log_start_offset}, "
                    f"{partition.high_watermark}]")
            else:
                sp = service.share_partition(group_id, tid, p, partition)
                sp.reset(offset)
                keys.append((group_id, tid, p))
            entries.append({"partition_index": p, "error_code": code, "error_message": message})
        out.append({"topic_name": name, "topic_id": tid, "partitions": entries})
    body = {"error_code": E.NONE, "error_message": None, "responses": out}
    pending = set(keys)
    if not keys:
        return respond(body)

    def done(key, code):
        pending.discard(key)
        if code:
            body["error_code"] = code
        if not pending:
            respond(body)
    for key in keys:
        service.persist(key, service.partitions[key], lambda code, k=key: done(k, code))


def delete_offsets(service, group_id: str, topics, topic_allowed,
                   respond: Callable[[dict], None]) -> None:
    """DeleteShareGroupOffsets: the group forgets its state for whole topics."""
    if service.broker.cluster is not None:
        return admin_cluster.delete_offsets(service, group_id, topics, topic_allowed, respond)
    if _not_empty(service, group_id):
        return respond({"error_code": E.NON_EMPTY_GROUP,
                        "error_message": f"Share group {group_id} has members; stop them "
                                         f"first.", "responses": []})
    if group_id not in service.groups():
        return respond({"error_code": E.GROUP_ID_NOT_FOUND,
                        "error_message": f"Share group {group_id} not found.", "responses": []})
    out, keys = [], []
    known = service.known_partitions(group_id)
    for t in topics:
        name = t["topic_name"]
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        code = E.NONE
        if not topic_allowed(name):
            code = E.TOPIC_AUTHORIZATION_FAILED
        elif meta is None:
            code = E.UNKNOWN_TOPIC_OR_PARTITION
        else:
            keys += [k for k in known if k[1] == tid]
        out.append({"topic_name": name, "topic_id": tid, "error_code": code,
                    "error_message": None})
    # the group coordinator's record of the group's share-partitions loses these topics
    service.membership.forget_topics(group_id, [t["topic_id"] for t in out
                                                if t["error_code"] == E.NONE])
    body = {"error_code": E.NONE, "error_message": None, "responses": out}
    pending = set(keys)
    if not keys:
        return respond(body)

    def done(key, code):
        pending.discard(key)
        if code:
            body["error_code"] = code
        if not pending:
            respond(body)
    for key in keys:
        service.delete_state(key, lambda code, k=key: done(k, code))
