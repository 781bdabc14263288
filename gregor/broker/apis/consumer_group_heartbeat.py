"""ConsumerGroupHeartbeat (68): join, heartbeat and leave a KIP-848 consumer group; the answer
carries the member's epoch and, when it changed, its assignment (by topic id)."""
from __future__ import annotations

from ._group_common import E, client_host, coordinator, later

API_KEY = 68
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    def build(result: dict) -> dict:
        return {"throttle_time_ms": 0, **result}
    coord = coordinator(broker)
    if coord is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "member_epoch": 0,
                      "heartbeat_interval_ms": 0})
    fut, respond = later(build)
    coord.consumer_heartbeat(request, ctx.api_version, ctx.client_id or "", client_host(ctx),
                             respond)
    return fut
