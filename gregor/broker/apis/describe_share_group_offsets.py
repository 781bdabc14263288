"""DescribeShareGroupOffsets (90): share-partition start offsets of share groups. DESCRIBE on
each group (GROUP_AUTHORIZATION_FAILED for the group) and on each topic (per partition). On a
cluster the start offsets come from the share-partitions' coordinators
(ReadShareGroupStateSummary, share/admin_cluster.py)."""
from __future__ import annotations

import asyncio

from ..security.checks import DESCRIBE, GROUP, TOPIC, allowed
from ..share import admin, admin_cluster
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
        elif broker.cluster is not None:
            out.append(admin_cluster.describe_offsets(
                service, gid, g["topics"],
                lambda name: allowed(broker, ctx, DESCRIBE, TOPIC, name)))
        else:
            out.append(admin.describe_offsets(
                service, gid, g["topics"],
                lambda name: allowed(broker, ctx, DESCRIBE, TOPIC, name)))
    if not any(asyncio.iscoroutine(g) for g in out):
        return {"throttle_time_ms": 0, "groups": out}

    async def gather():
        groups = [await g if asyncio.iscoroutine(g) else g for g in out]
        return {"throttle_time_ms": 0, "groups": groups}
    return asyncio.ensure_future(gather())
