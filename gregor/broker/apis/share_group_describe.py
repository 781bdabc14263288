"""ShareGroupDescribe (77): state, epochs, members and assignments of share groups.
DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for the others)."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, NO_AUTHORIZED_OPS, allowed, authorized_operations
from ..share.membership import ASSIGNOR
from ._share_common import E, other_group_type, share_service

API_KEY = 77
VERSIONS = (1, 1)


def _empty(gid: str, code: int, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message, "group_id": gid, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": NO_AUTHORIZED_OPS}


def describe(service, gid: str) -> dict:
    group = service.membership.groups.get(gid)
    if group is None:
        if gid in service.groups():          # known by its state only (no member since start)
            return {**_empty(gid, E.NONE), "group_state": "Empty", "assignor_name": ASSIGNOR}
        return _empty(gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
    members = []
    for m in group.members.values():
        members.append({
            "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch,
            "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed),
            "assignment": {"topic_partitions": [
                {"topic_id": t, "topic_name": service.topic_name(t) or "",
                 "partitions": sorted(ps)} for t, ps in m.assignment.items()]}})
    return {"error_code": E.NONE, "error_message": None, "group_id": gid,
            "group_state": group.state, "group_epoch": group.epoch,
            "assignment_epoch": group.assignment_epoch, "assignor_name": ASSIGNOR,
            "members": members, "authorized_operations": NO_AUTHORIZED_OPS}


def handle(broker, ctx, request):
    service = share_service(broker)
    out = []
    for gid in request["group_ids"]:
        if not allowed(broker, ctx, DESCRIBE, GROUP, gid):
            out.append(_empty(gid, E.GROUP_AUTHORIZATION_FAILED))
            continue
        if service is None:
            out.append(_empty(gid, E.COORDINATOR_NOT_AVAILABLE))
            continue
        kind = other_group_type(broker, gid)
        if kind is not None:
            out.append(_empty(gid, E.GROUP_ID_NOT_FOUND,
                              f"Group {gid} is not a share group (it is a {kind} group)."))
            continue
        d = describe(service, gid)
        if request.get("include_authorized_operations") and d["error_code"] == E.NONE:
            d["authorized_operations"] = authorized_operations(broker, ctx, GROUP, gid)
        out.append(d)
    return {"throttle_time_ms": 0, "groups": out}
