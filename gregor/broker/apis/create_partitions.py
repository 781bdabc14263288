"""CreatePartitions (37): raise a topic's partition count (never lower it).

controller_mutation_rate counts the partitions added: v3+ topics over the quota fail with
THROTTLING_QUOTA_EXCEEDED, older versions are only throttled (quotas/mutations.py).

In a cluster only the controller adds partitions (NOT_CONTROLLER elsewhere): it places them
(round robin continued, or the request's assignment, with the topic's replication factor),
writes the new assignment and the new partitions' states, and answers once its own view has
them; every replica's broker opens them when they reach its view.
"""
from __future__ import annotations

from ...protocol.errors import InvalidReplicaAssignmentError
from ..quotas.mutations import mutation_quota
from ..security.checks import ALTER, denied_topic_errors
from .per_topic import controller_results, per_topic_results

API_KEY = 37
VERSIONS = (0, 3)           # v2 is the first flexible version, v3 the first strict-quota one


def handle(broker, ctx, request):
    denied = denied_topic_errors(broker, ctx, ALTER, (t["name"] for t in request["topics"]),
                                 "The topic authorization is failed.")
    quota = mutation_quota(broker, ctx)
    if broker.cluster is not None:
        return _in_cluster(broker, request, denied, quota)

    def add_partitions(t: dict) -> None:
        for a in t["assignments"] or []:
            ids = a["broker_ids"]
            if not ids or any(b != broker.broker_id for b in ids):
                raise InvalidReplicaAssignmentError(
                    f"assignment {ids} names brokers other than the only one, "
                    f"{broker.broker_id}")
        broker.add_partitions(t["name"], t["count"], validate_only=True)
        if not request["validate_only"]:
            quota.record(t["count"] - broker.store.get(t["name"]).partitions)
            broker.add_partitions(t["name"], t["count"])
    results = per_topic_results(broker, API_KEY, request["topics"], add_partitions, denied)
    return {"throttle_time_ms": quota.throttle_time_ms(), "results": results}


def _in_cluster(broker, request, denied: dict, quota):
    return controller_results(
        broker, API_KEY, request["topics"],
        lambda unique: broker.cluster.add_partitions(unique, request["validate_only"],
                                                     request["timeout_ms"], quota),
        "results", denied, throttle=quota.throttle_time_ms)
