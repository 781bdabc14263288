"""AlterShareGroupOffsets (91): start an empty share group's share-partitions again at given
offsets. READ on the group and on each topic, as Kafka checks them."""
from __future__ import annotations

from ..security.checks import GROUP, READ, TOPIC, allowed
from ..share import admin
from ._group_common import later
from ._share_common import E, share_service

API_KEY = 91
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    def build(body):
        return {"throttle_time_ms": 0, **body}
    gid = request["group_id"]
    if not allowed(broker, ctx, READ, GROUP, gid):
        return build({"error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                      "responses": []})
    service = share_service(broker)
    if service is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "error_message": None,
                      "responses": []})
    fut, respond = later(build)
    admin.alter_offsets(service, broker, gid, request["topics"],
                        lambda name: allowed(broker, ctx, READ, TOPIC, name), respond)
    return fut
