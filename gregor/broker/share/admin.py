"""Share groups in the group admin APIs: ListGroups (type "share"), DeleteGroups (an empty
share group goes with its share-partition state), and what DescribeGroups answers for them."""
from __future__ import annotations

from typing import Callable

from ...protocol.errors import ErrorCode

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
    results: dict = {}
    keys = []
    for gid in group_ids:
        code = service.membership.delete(gid) if gid in service.membership.groups else E.NONE
        results[gid] = code
        if code == E.NONE:
            keys += [k for k in service.known_partitions(gid)]
    if not keys:
        respond(results)
        return
    left = [len(keys)]

    def one(key, code):
        if code:
            results[key[0]] = code
        left[0] -= 1
        if left[0] == 0:
            respond(results)
    for key in keys:
        service.delete_state(key, lambda code, k=key: one(k, code))
