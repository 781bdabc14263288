"""ConsumerGroupDescribe (69): epochs, members and assignments of KIP-848 consumer groups.
A classic group answers GROUP_ID_NOT_FOUND here, as on Kafka, which is what makes admin
clients (librdkafka) fall back to DescribeGroups for it."""
from __future__ import annotations

from ._group_common import E, coordinator

API_KEY = 69
VERSIONS = (0, 0)
NO_OPERATIONS = -2147483648


def handle(broker, ctx, request):
    coord = coordinator(broker)
    groups = []
    for gid in request["group_ids"]:
        if coord is None:
            d = {"error_code": E.COORDINATOR_NOT_AVAILABLE, "group_id": gid,
                 "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                 "assignor_name": "", "members": []}
        else:
            d = coord.consumer_describe(gid)
        d["authorized_operations"] = NO_OPERATIONS
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}
