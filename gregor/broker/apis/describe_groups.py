"""DescribeGroups (15): state, protocol and members of groups."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, allowed, authorized_operations
from ..share import admin as share_admin
from ._group_common import E, coordinator

API_KEY = 15
VERSIONS = (0, 5)
# Not asked for (or not supported): Kafka's "unknown" value; clients ignore it.
NO_OPERATIONS = -2147483648


def handle(broker, ctx, request):
    coord = coordinator(broker)
    groups = []
    with_ops = ctx.api_version >= 3 and request.get("include_authorized_operations")
    for gid in request["groups"]:
        if not allowed(broker, ctx, DESCRIBE, GROUP, gid):
            d = {"error_code": E.GROUP_AUTHORIZATION_FAILED, "group_id": gid, "group_state": "",
                 "protocol_type": "", "protocol_data": "", "members": []}
        elif coord is None:
            d = {"error_code": E.COORDINATOR_NOT_AVAILABLE, "group_id": gid, "group_state": "",
                 "protocol_type": "", "protocol_data": "", "members": []}
        elif share_admin.is_share_group(getattr(broker, "share", None), gid):
            d = share_admin.describe_classic(gid)
        else:
            d = coord.describe(gid)
        d["authorized_operations"] = authorized_operations(broker, ctx, GROUP, gid) \
            if with_ops and d["error_code"] == E.NONE else NO_OPERATIONS
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}
