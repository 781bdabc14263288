"""SyncGroup (14): the leader sends every member's assignment; each member gets its own. A
follower's answer waits for the leader's request."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed
from ._group_common import E, coordinator, later

API_KEY = 14
VERSIONS = (0, 5)


def handle(broker, ctx, request):
    def build(r: dict) -> dict:
        return {"throttle_time_ms": 0, "error_code": r["error_code"],
                "protocol_type": r.get("protocol_type"), "protocol_name": r.get("protocol_name"),
                "assignment": r["assignment"]}
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return build({"error_code": E.GROUP_AUTHORIZATION_FAILED, "assignment": b""})
    coord = coordinator(broker)
    if coord is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "assignment": b""})
    fut, respond = later(build)
    coord.sync(request["group_id"], request["generation_id"], request["member_id"],
               request.get("group_instance_id"), request.get("protocol_type"),
               request.get("protocol_name"),
               {a["member_id"]: bytes(a["assignment"]) for a in request["assignments"]},
               respond)
    return fut
