"""DescribeShareGroupOffsets (90): share-partition start offsets of share groups. DESCRIBE on
each group (GROUP_AUTHORIZATION_FAILED for the group) and on each topic (per partition)."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, TOPIC, allowed
from ..share import admin
from ._share_common import E, share_service

API_KEY = 90
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    service = share_service(broker)
    out = []
    for g in request["groups"]:
        gid = g["group_id"]
        if not allowed(broker, ctx, DESCRIBE, GROUP, gid):
            out.append({"group_id": gid, "topics": [],
                        "error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None})
        elif service is None:
            out.append({"group_id": gid, "topics": [],
                        "error_code": E.COORDINATOR_NOT_AVAILABLE, "error_message": None})
        else:
            out.append(admin.describe_offsets(
                service, gid, g["topics"],
                lambda name: allowed(broker, ctx, DESCRIBE, TOPIC, name)))
    return {"throttle_time_ms": 0, "groups": out}
