"""CreatePartitions (37): raise a topic's partition count (never lower it).

In a cluster only the controller adds partitions (NOT_CONTROLLER elsewhere): it places them
(round robin continued, or the request's assignment, with the topic's replication factor),
writes the new assignment and the new partitions' states, and answers once its own view has
them; every replica's broker opens them when they reach its view.
"""
from __future__ import annotations

from collections import Counter

from ...protocol.errors import ErrorCode, InvalidReplicaAssignmentError
from ._txn_common import respond_later
from .per_topic import per_topic_results

API_KEY = 37
VERSIONS = (0, 1)           # v2 is the first flexible version


def handle(broker, ctx, request):
    if broker.cluster is not None:
        return _in_cluster(broker, request)

    def add_partitions(t: dict) -> None:
        for a in t["assignments"] or []:
            ids = a["broker_ids"]
            if not ids or any(b != broker.broker_id for b in ids):
                raise InvalidReplicaAssignmentError(
                    f"assignment {ids} names brokers other than the only one, "
                    f"{broker.broker_id}")
        broker.add_partitions(t["name"], t["count"], request["validate_only"])
    return {"throttle_time_ms": 0,
            "results": per_topic_results(broker, API_KEY, request["topics"], add_partitions)}


def _in_cluster(broker, request):
    topics = request["topics"]
    counts = Counter(t["name"] for t in topics)
    unique = [t for t in topics if counts[t["name"]] == 1]

    def build(errors) -> dict:
        results = []
        for t in topics:
            res = {"name": t["name"], "error_code": ErrorCode.NONE, "error_message": None}
            if counts[t["name"]] > 1:
                res["error_code"] = ErrorCode.INVALID_REQUEST
                res["error_message"] = f"topic {t['name']!r} appears more than once"
            elif errors is None:
                res["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            elif errors.get(t["name"]) is not None:
                e = errors[t["name"]]
                res["error_code"], res["error_message"] = e.code, e.message
                broker.metrics.error(API_KEY, e.name)
            results.append(res)
        return {"throttle_time_ms": 0, "results": results}
    return respond_later(broker.cluster.add_partitions(unique, request["validate_only"],
                                                       request["timeout_ms"]), build)
