"""CreatePartitions (37): raise a topic's partition count (never lower it)."""
from __future__ import annotations

from collections import Counter

from ...protocol.errors import ErrorCode, InvalidReplicaAssignmentError, KafkaError

API_KEY = 37
VERSIONS = (0, 1)           # v2 is the first flexible version


def handle(broker, ctx, request) -> dict:
    counts = Counter(t["name"] for t in request["topics"])
    results = []
    for t in request["topics"]:
        name = t["name"]
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(res)
        if counts[name] > 1:
            res["error_code"] = ErrorCode.INVALID_REQUEST
            res["error_message"] = f"topic {name!r} appears more than once in the request"
            continue
        try:
            for a in t["assignments"] or []:
                ids = a["broker_ids"]
                if not ids or any(b != broker.broker_id for b in ids):
                    raise InvalidReplicaAssignmentError(
                        f"assignment {ids} names brokers other than the only one, "
                        f"{broker.broker_id}")
            broker.add_partitions(name, t["count"], request["validate_only"])
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(API_KEY, e.name)
    return {"throttle_time_ms": 0, "results": results}
