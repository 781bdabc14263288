"""DeleteShareGroupOffsets (92): an empty share group forgets its state for whole topics.
DELETE on the group, READ on each topic, as Kafka checks them."""
from __future__ import annotations

from ..security.checks import DELETE, GROUP, READ, TOPIC, allowed
from ..share import admin
from ._group_common import later
from ._share_common import E, share_service

API_KEY = 92
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    def build(body):
        return {"throttle_time_ms": 0, **body}
    gid = request["group_id"]
    if not allowed(broker, ctx, DELETE, GROUP, gid):
        return build({"error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None,
                      "responses": []})
    service = share_service(broker)
    if service is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "error_message": None,
                      "responses": []})
    fut, respond = later(build)
    admin.delete_offsets(service, gid, request["topics"],
                         lambda name: allowed(broker, ctx, READ, TOPIC, name), respond)
    return fut
