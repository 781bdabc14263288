"""DeleteGroups (42): delete empty groups with their committed offsets. Each group needs
DELETE on it (GROUP_AUTHORIZATION_FAILED for the others, which are left alone)."""
from __future__ import annotations

from ..security.checks import DELETE, GROUP, denied_names
from ..share import admin as share_admin
from ._group_common import E, coordinator, later

API_KEY = 42
VERSIONS = (0, 2)


def handle(broker, ctx, request):
    names = list(dict.fromkeys(request["groups_names"]))
    denied = denied_names(broker, ctx, DELETE, GROUP, names)
    refused = {g: E.GROUP_AUTHORIZATION_FAILED for g in names if g in denied}
    names = [g for g in names if g not in denied]

    def build(results: dict) -> dict:
        return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": c}
                                                   for g, c in {**results, **refused}.items()]}
    coord = coordinator(broker)
    share = getattr(broker, "share", None)
    shared = [g for g in names if share_admin.is_share_group(share, g)]
    names = [g for g in names if g not in shared]
    if not names and not shared:
        return build({})
    if coord is None and names:
        return build({g: E.COORDINATOR_NOT_AVAILABLE for g in names})
    fut, respond = later(build)
    parts: dict = {}
    waiting = [bool(names) + bool(shared)]

    def part(results: dict) -> None:
        parts.update(results)
        waiting[0] -= 1
        if waiting[0] == 0:
            respond(parts)
    if shared:
        share_admin.delete_groups(share, shared, part)
    if names:
        coord.delete_groups(names, part)
    return fut
