"""Heartbeat (12): a member is alive; the answer tells it when to rejoin."""
from __future__ import annotations

from ._group_common import E, coordinator

API_KEY = 12
VERSIONS = (0, 4)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    code = E.COORDINATOR_NOT_AVAILABLE if coord is None else coord.heartbeat(
        request["group_id"], request["generation_id"], request["member_id"],
        request.get("group_instance_id"))
    return {"throttle_time_ms": 0, "error_code": code}
