"""ListGroups (16): the groups this broker coordinates, share groups included (v4 filters by
state, v5 by type: classic, consumer, share)."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, allowed_names, cluster_allowed
from ..share import admin as share_admin
from ._group_common import E, coordinator

API_KEY = 16
VERSIONS = (0, 5)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE, "groups": []}
    groups = coord.list_groups(set(request.get("states_filter") or ()),
                               set(request.get("types_filter") or ()))
    groups += share_admin.list_groups(getattr(broker, "share", None),
                                      set(request.get("states_filter") or ()),
                                      set(request.get("types_filter") or ()))
    if broker.authorizer is not None and not cluster_allowed(broker, ctx, DESCRIBE,
                                                             log_denied=False):
        # without DESCRIBE on the cluster: only the groups it may DESCRIBE, never an error
        ok = allowed_names(broker, ctx, DESCRIBE, GROUP, (g["group_id"] for g in groups),
                           log_denied=False)
        groups = [g for g in groups if g["group_id"] in ok]
    return {"throttle_time_ms": 0, "error_code": E.NONE, "groups": groups}
