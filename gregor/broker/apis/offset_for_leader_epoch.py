"""OffsetForLeaderEpoch (23): where a leader epoch ended on this partition's leader (KIP-101).

A follower coming back asks with the latest epoch in its own cache and truncates its log to
the answer before fetching (KIP-279); consumers ask after a leader change to detect truncation
(KIP-320). The answer comes from the leader epoch cache: for the current epoch the log end,
for an older epoch the start offset of the next epoch, paired with the largest epoch at or
below the one asked; (-1, -1) when the epoch is older than anything the cache knows.
`current_leader_epoch` (v2+) fences a caller with a stale view as Fetch does.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import CLUSTER_ACTION, DESCRIBE, cluster_allowed, denied_topics

API_KEY = 23
VERSIONS = (0, 4)


def handle(broker, ctx, request) -> dict:
    rm = broker.replica_manager
    # followers hold CLUSTER_ACTION; consumers need DESCRIBE on the topics (Kafka's order)
    denied = () if broker.authorizer is None or \
        cluster_allowed(broker, ctx, CLUSTER_ACTION, log_denied=False) else \
        denied_topics(broker, ctx, DESCRIBE, (t["topic"] for t in request["topics"]))
    topics = []
    for t in request["topics"]:
        parts = []
        for pt in t["partitions"]:
            out = {"error_code": ErrorCode.NONE, "partition": pt["partition"],
                   "leader_epoch": -1, "end_offset": -1}
            parts.append(out)
            if t["topic"] in denied:
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = rm.get(t["topic"], pt["partition"])
            if broker.cluster is not None and (p is None or not p.is_leader):
                out["error_code"] = broker.cluster.partition_error(t["topic"], pt["partition"])
                continue
            if p is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            current = pt.get("current_leader_epoch", -1)
            if current >= 0 and current != p.leader_epoch:
                out["error_code"] = (ErrorCode.FENCED_LEADER_EPOCH if current < p.leader_epoch
                                     else ErrorCode.UNKNOWN_LEADER_EPOCH)
                continue
            epoch, end = p.log.leader_epochs.end_offset_for(pt["leader_epoch"],
                                                            p.log.log_end_offset)
            out["leader_epoch"], out["end_offset"] = epoch, end
        topics.append({"topic": t["topic"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
