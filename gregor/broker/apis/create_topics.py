"""CreateTopics (19): create topics with a partition count, replication factor 1 and configs.

A replication factor above the number of live brokers (1) is INVALID_REPLICATION_FACTOR;
num_partitions / replication_factor of -1 (v4+) take the broker defaults; validate_only checks
everything and creates nothing. A name listed twice fails with INVALID_REQUEST for both.

In cluster mode only the controller creates topics (replicas placed over the live brokers);
other brokers answer NOT_CONTROLLER for every topic, as Kafka's ZooKeeper-mode brokers do at
every version, and clients resend to the controller named in Metadata. The answer comes once
the topic is in this broker's metadata cache and every live broker was told (or timeout_ms passed).
"""
from __future__ import annotations

from ..security.checks import CREATE, cluster_allowed, denied_topic_errors
from .per_topic import controller_results, per_topic_results

API_KEY = 19
VERSIONS = (0, 4)           # v5 is the first flexible version


def handle(broker, ctx, request) -> dict:
    validate_only = request.get("validate_only", False)
    # CREATE on the cluster allows every topic; else CREATE on each topic (Kafka's order)
    denied = {} if broker.authorizer is None or \
        cluster_allowed(broker, ctx, CREATE, log_denied=False) else \
        denied_topic_errors(broker, ctx, CREATE, (t["name"] for t in request["topics"]),
                            "Authorization failed.")
    if broker.cluster is not None:
        return _in_cluster(broker, request, validate_only, denied)

    def create(t: dict) -> None:
        configs = {c["name"]: c["value"] for c in t["configs"]}
        partitions, clean = broker.check_new_topic(
            t["name"], t["num_partitions"], t["replication_factor"], configs, t["assignments"])
        if not validate_only:
            broker.create_topic(t["name"], partitions, clean)
    return {"throttle_time_ms": 0,
            "topics": per_topic_results(broker, API_KEY, request["topics"], create, denied)}


def _in_cluster(broker, request, validate_only: bool, denied: dict):
    return controller_results(
        broker, API_KEY, request["topics"],
        lambda unique: broker.cluster.create_topics(unique, validate_only, request["timeout_ms"]),
        "topics", denied)
