"""OffsetCommit (8): store a group's consumed positions. Answered once the commit is durable
in `__consumer_offsets` (committed like acks=all), so an acknowledged commit survives a crash."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed, denied_topics
from ._group_common import E, by_topic, coordinator, later, topic_partitions

API_KEY = 8
VERSIONS = (0, 9)


def known_partition(broker, topic: str, partition: int) -> bool:
    t = broker.store.get(topic)
    return t is not None and not t.deleting and 0 <= partition < t.partitions


def handle(broker, ctx, request):
    v = ctx.api_version
    entries = topic_partitions(request["topics"])
    results: dict = {}
    offsets: dict = {}
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "topics": by_topic(
            {(t, p): E.GROUP_AUTHORIZATION_FAILED for t, p, _ in entries})}
    denied = denied_topics(broker, ctx, READ, (t["name"] for t in request["topics"]))
    for topic, partition, p in entries:
        if topic in denied:
            results[(topic, partition)] = E.TOPIC_AUTHORIZATION_FAILED
        elif not known_partition(broker, topic, partition):
            results[(topic, partition)] = E.UNKNOWN_TOPIC_OR_PARTITION
        else:
            results[(topic, partition)] = None          # keeps the request's order
            offsets[(topic, partition)] = (p["committed_offset"], p["committed_leader_epoch"],
                                           p["committed_metadata"])

    def build(stored: dict) -> dict:
        results.update(stored)
        return {"throttle_time_ms": 0, "topics": by_topic(results)}
    coord = coordinator(broker)
    if coord is None:
        return build({tp: E.COORDINATOR_NOT_AVAILABLE for tp in offsets})
    if not offsets:
        code = coord.group_status(request["group_id"])
        return build({tp: code for tp, c in results.items()
                      if c != E.TOPIC_AUTHORIZATION_FAILED} if code else {})
    fut, respond = later(build)
    coord.commit(request["group_id"],
                 request["generation_id_or_member_epoch"] if v >= 1 else -1,
                 request["member_id"] if v >= 1 else "", request.get("group_instance_id"),
                 offsets, respond,
                 retention_ms=request["retention_time_ms"] if 2 <= v <= 4 else -1,
                 api_version=v)
    return fut
