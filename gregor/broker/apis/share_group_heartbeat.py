"""ShareGroupHeartbeat (76): join, heartbeat and leave a share group; the answer carries the
member's epoch and, when it changed, its assignment (by topic id), once what it changed is
written to `__consumer_offsets` (share/membership.py). v1 only: Kafka 4.1 removed
v0, and librdkafka checks for exactly v1."""
from __future__ import annotations

import asyncio

from ..security.checks import DESCRIBE, GROUP, READ, allowed, denied_topics
from ._group_common import client_host
from ._share_common import E, other_group_type, share_service

API_KEY = 76
VERSIONS = (1, 1)


def _error(code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
            "assignment": None}


def handle(broker, ctx, request):
    group_id = request["group_id"]
    if not allowed(broker, ctx, READ, GROUP, group_id):
        return _error(E.GROUP_AUTHORIZATION_FAILED)
    topics = request.get("subscribed_topic_names")
    if topics and denied_topics(broker, ctx, DESCRIBE, topics):
        return _error(E.TOPIC_AUTHORIZATION_FAILED)
    service = share_service(broker)
    if service is None:
        return _error(E.COORDINATOR_NOT_AVAILABLE)
    coord = broker.group_coordinator
    if coord is None:
        return _error(E.COORDINATOR_NOT_AVAILABLE)
    if group_id:
        # the group's members live on its coordinator, as for every group (a member told
        # NOT_COORDINATOR looks the coordinator up again)
        code = coord.group_status(group_id)
        if code:
            return _error(code)
    kind = other_group_type(broker, group_id)
    if kind is not None:
        return _error(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group (it is a "
                                            f"{kind} group).")
    # answered once what the heartbeat changed is written to __consumer_offsets
    fut = asyncio.get_running_loop().create_future()

    def respond(body: dict) -> None:
        if not fut.done():
            fut.set_result({"throttle_time_ms": 0, **body})

    def failed(code: int, message: str | None) -> None:
        if not fut.done():
            fut.set_result(_error(code, message))
    service.membership.heartbeat(request, ctx.client_id or "", client_host(ctx), respond,
                                 failed)
    return fut
