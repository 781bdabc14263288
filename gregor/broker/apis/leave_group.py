"""LeaveGroup (13): members leave (one member before v3, a batch from v3)."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed
from ._group_common import E, coordinator

API_KEY = 13
VERSIONS = (0, 5)


def handle(broker, ctx, request):
    v = ctx.api_version
    if v < 3:
        members = [(request["member_id"], None)]
    else:
        members = [(m["member_id"], m["group_instance_id"]) for m in request["members"]]
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": E.GROUP_AUTHORIZATION_FAILED, "members": []}
    coord = coordinator(broker)
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE, "members": []}
    code, results = coord.leave(request["group_id"], members)
    if v < 3:
        if not code and results:
            code = results[0][2]
        return {"throttle_time_ms": 0, "error_code": code, "members": []}
    return {"throttle_time_ms": 0, "error_code": code,
            "members": [{"member_id": m, "group_instance_id": i, "error_code": c}
                        for m, i, c in results]}
