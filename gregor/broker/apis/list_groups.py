"""ListGroups (16): the groups this broker coordinates (v4 filters by state, v5 by type)."""
from __future__ import annotations

from ._group_common import E, coordinator

API_KEY = 16
VERSIONS = (0, 5)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE, "groups": []}
    groups = coord.list_groups(set(request.get("states_filter") or ()),
                               set(request.get("types_filter") or ()))
    return {"throttle_time_ms": 0, "error_code": E.NONE, "groups": groups}
