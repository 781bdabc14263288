"""ConsumerGroupHeartbeat (68): join, heartbeat and leave a KIP-848 consumer group; the answer
carries the member's epoch and, when it changed, its assignment (by topic id)."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, READ, allowed, denied_topics
from ._group_common import E, client_host, coordinator, later

API_KEY = 68
VERSIONS = (0, 1)


def _denied(broker, ctx, request) -> int:
    """READ on the group; DESCRIBE on every topic named in the subscription (KAFKA-18813)."""
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return E.GROUP_AUTHORIZATION_FAILED
    if request.get("subscribed_topic_names") and \
            denied_topics(broker, ctx, DESCRIBE, request["subscribed_topic_names"]):
        return E.TOPIC_AUTHORIZATION_FAILED
    return E.NONE


def handle(broker, ctx, request):
    def build(result: dict) -> dict:
        return {"throttle_time_ms": 0, **result}
    denied = _denied(broker, ctx, request)
    if denied:
        return build({"error_code": denied, "member_epoch": 0, "heartbeat_interval_ms": 0})
    coord = coordinator(broker)
    if coord is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "member_epoch": 0,
                      "heartbeat_interval_ms": 0})
    fut, respond = later(build)
    coord.consumer_heartbeat(request, ctx.api_version, ctx.client_id or "", client_host(ctx),
                             respond)
    return fut
