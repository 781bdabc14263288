"""ConsumerGroupDescribe (69): epochs, members and assignments of KIP-848 consumer groups.
A classic group answers GROUP_ID_NOT_FOUND here, as on Kafka, which is what makes admin
clients (librdkafka) fall back to DescribeGroups for it."""
from __future__ import annotations

from ..security.checks import (DESCRIBE, GROUP, allowed, authorized_operations,
                               denied_topics)
from ._group_common import E, coordinator

API_KEY = 69
VERSIONS = (0, 0)
NO_OPERATIONS = -2147483648


def handle(broker, ctx, request):
    coord = coordinator(broker)
    groups = []
    for gid in request["group_ids"]:
        if not allowed(broker, ctx, DESCRIBE, GROUP, gid):
            d = _refused(gid, E.GROUP_AUTHORIZATION_FAILED)
        elif coord is None:
            d = {"error_code": E.COORDINATOR_NOT_AVAILABLE, "group_id": gid,
                 "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                 "assignor_name": "", "members": []}
        else:
            d = coord.consumer_describe(gid)
            if d["error_code"] == E.NONE and _hides_topics(broker, ctx, d):
                d = _refused(gid, E.TOPIC_AUTHORIZATION_FAILED)
        d["authorized_operations"] = authorized_operations(broker, ctx, GROUP, gid) \
            if request["include_authorized_operations"] and d["error_code"] == E.NONE \
            else NO_OPERATIONS
        groups.append(d)
    return {"throttle_time_ms": 0, "groups": groups}


def _refused(gid: str, code: int) -> dict:
    return {"error_code": code, "group_id": gid, "group_state": "", "group_epoch": 0,
            "assignment_epoch": 0, "assignor_name": "", "members": []}


def _hides_topics(broker, ctx, group: dict) -> bool:
    """A group whose subscriptions or assignments name a topic the principal may not
    DESCRIBE is not described (KAFKA-18813): its topics are not disclosed."""
    if broker.authorizer is None:
        return False
    names = set()
    for m in group["members"]:
        names.update(m.get("subscribed_topic_names") or ())
        for key in ("assignment", "target_assignment"):
            names.update(tp["topic_name"] for tp in (m.get(key) or {}).get("topic_partitions",
                                                                             ()))
    return bool(denied_topics(broker, ctx, DESCRIBE, names))
