"""CreatePartitions (37): raise a topic's partition count (never lower it)."""
from __future__ import annotations

from ...protocol.errors import InvalidReplicaAssignmentError
from .per_topic import per_topic_results

API_KEY = 37
VERSIONS = (0, 1)           # v2 is the first flexible version


def handle(broker, ctx, request) -> dict:
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
