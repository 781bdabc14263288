"""CreateTopics (19): create topics with a partition count, replication factor 1 and configs.

A replication factor above the number of live brokers (1) is INVALID_REPLICATION_FACTOR;
num_partitions / replication_factor of -1 (v4+) take the broker defaults; validate_only checks
everything and creates nothing. A name listed twice fails with INVALID_REQUEST for both.
From v5 a created (or validated) topic's result carries its partition count, replication
factor and configs, from v7 its topic id. controller_mutation_rate counts the partitions
created: v6+ topics over the quota fail with THROTTLING_QUOTA_EXCEEDED, older versions are
only throttled (quotas/mutations.py).

In cluster mode only the controller creates topics (replicas placed over the live brokers);
other brokers answer NOT_CONTROLLER for every topic, as Kafka's ZooKeeper-mode brokers do at
every version, and clients resend to the controller named in Metadata. The answer comes once
the topic is in this broker's metadata cache and every live broker was told (or timeout_ms passed).
"""
from __future__ import annotations

from ..quotas.mutations import mutation_quota
from ..security.checks import CREATE, cluster_allowed, denied_topic_errors
from ..topics import TopicInfo
from .describe_configs import _topic_entries
from .per_topic import controller_results, per_topic_results

API_KEY = 19
VERSIONS = (0, 7)


def handle(broker, ctx, request) -> dict:
    validate_only = request.get("validate_only", False)
    # CREATE on the cluster allows every topic; else CREATE on each topic (Kafka's order)
    denied = {} if broker.authorizer is None or \
        cluster_allowed(broker, ctx, CREATE, log_denied=False) else \
        denied_topic_errors(broker, ctx, CREATE, (t["name"] for t in request["topics"]),
                            "Authorization failed.")
    quota = mutation_quota(broker, ctx)
    with_details = ctx is not None and ctx.api_version >= 5
    if broker.cluster is not None:
        return _in_cluster(broker, request, validate_only, denied, quota, with_details)

    def create(t: dict):
        configs = {c["name"]: c["value"] for c in t["configs"]}
        partitions, clean = broker.check_new_topic(
            t["name"], t["num_partitions"], t["replication_factor"], configs, t["assignments"])
        info = TopicInfo(t["name"], "0" * 32, partitions, clean)
        if not validate_only:
            quota.record(partitions)
            info = broker.create_topic(t["name"], partitions, clean)
        return _details(broker, info, 1) if with_details else None
    topics = per_topic_results(broker, API_KEY, request["topics"], create, denied)
    return {"throttle_time_ms": quota.throttle_time_ms(), "topics": topics}


def _details(broker, info: TopicInfo, replication_factor: int) -> dict:
    return {"topic_id": info.topic_id_bytes, "num_partitions": info.partitions,
            "replication_factor": replication_factor,
            "configs": _topic_entries(broker, info, None, False, False)}


def _in_cluster(broker, request, validate_only: bool, denied: dict, quota, with_details: bool):
    member = broker.cluster

    def details(t: dict):
        info = member.topic_info(t["name"])
        view = member.snapshot.topics.get(t["name"])
        if info is None or view is None or not view.assignment.partitions:
            return None                  # validate_only: nothing to describe yet
        return _details(broker, info, len(view.assignment.partitions[0]))
    return controller_results(
        broker, API_KEY, request["topics"],
        lambda unique: member.create_topics(unique, validate_only, request["timeout_ms"],
                                            quota),
        "topics", denied, details if with_details else None, quota.throttle_time_ms)
