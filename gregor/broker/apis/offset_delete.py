"""OffsetDelete (47): delete a group's committed offsets for partitions it no longer reads
(refused with GROUP_SUBSCRIBED_TO_TOPIC for topics its members still subscribe to)."""
from __future__ import annotations

from ..security.checks import DELETE, GROUP, READ, allowed, denied_topics
from ._group_common import E, by_topic, coordinator, later

API_KEY = 47
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    if not allowed(broker, ctx, DELETE, GROUP, request["group_id"]):
        return {"error_code": E.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0,
                "topics": []}
    denied = denied_topics(broker, ctx, READ, (t["name"] for t in request["topics"]))
    partitions = [(t["name"], p["partition_index"]) for t in request["topics"]
                  for p in t["partitions"] if t["name"] not in denied]
    refused = {(t["name"], p["partition_index"]): E.TOPIC_AUTHORIZATION_FAILED
               for t in request["topics"] if t["name"] in denied for p in t["partitions"]}

    def build(result) -> dict:
        code, per_partition = result
        return {"error_code": code, "throttle_time_ms": 0,
                "topics": by_topic({**per_partition, **refused} if not code else refused)}
    coord = coordinator(broker)
    if coord is None:
        return build((E.COORDINATOR_NOT_AVAILABLE, {}))
    fut, respond = later(build)
    coord.delete_offsets(request["group_id"], partitions, lambda c, r: respond((c, r)))
    return fut
