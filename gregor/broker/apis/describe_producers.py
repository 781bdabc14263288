"""DescribeProducers (61): the producers a partition remembers (KIP-664): id, epoch, last
sequence and timestamp, and where their open transaction began (-1 if none). This is how an
operator finds the producer behind a stuck last stable offset."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import READ, denied_topics

API_KEY = 61
VERSIONS = (0, 0)


def handle(broker, ctx, request) -> dict:
    rm = broker.replica_manager
    denied = denied_topics(broker, ctx, READ, (t["name"] for t in request["topics"]))
    topics = []
    for t in request["topics"]:
        parts = []
        for index in t["partition_indexes"]:
            p = rm.get(t["name"], index)
            out = {"partition_index": index, "error_code": ErrorCode.NONE,
                   "error_message": None, "active_producers": []}
            parts.append(out)
            if t["name"] in denied:
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                out["error_message"] = f"the principal may not READ topic {t['name']!r}"
                continue
            if p is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out["error_message"] = f"{t['name']}-{index} is not hosted here"
                continue
            out["active_producers"] = [
                {"producer_id": pid, "producer_epoch": e.epoch, "last_sequence": e.last_seq,
                 "last_timestamp": e.last_timestamp, "coordinator_epoch": -1,
                 "current_txn_start_offset": e.txn_first_offset}
                for pid, e in sorted(p.log.producer_state.items())]
        topics.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
