"""Heartbeat (12): a member is alive; the answer tells it when to rejoin."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed
from ._group_common import E, coordinator

API_KEY = 12
VERSIONS = (0, 4)


def handle(broker, ctx, request):
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": E.GROUP_AUTHORIZATION_FAILED}
    coord = coordinator(broker)
    code = E.COORDINATOR_NOT_AVAILABLE if coord is None else coord.heartbeat(
        request["group_id"], request["generation_id"], request["member_id"],
        request.get("group_instance_id"))
    return {"throttle_time_ms": 0, "error_code": code}
