"""DeleteGroups (42): delete empty groups with their committed offsets."""
from __future__ import annotations

from ._group_common import E, coordinator, later

API_KEY = 42
VERSIONS = (0, 2)


def handle(broker, ctx, request):
    def build(results: dict) -> dict:
        return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": c}
                                                   for g, c in results.items()]}
    names = list(dict.fromkeys(request["groups_names"]))
    coord = coordinator(broker)
    if coord is None:
        return build({g: E.COORDINATOR_NOT_AVAILABLE for g in names})
    fut, respond = later(build)
    coord.delete_groups(names, respond)
    return fut
