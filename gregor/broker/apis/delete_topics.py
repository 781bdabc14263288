"""DeleteTopics (20): delete topics and their data (two-phase, crash-safe: see topics.py).

In a cluster only the controller deletes (NOT_CONTROLLER elsewhere, as Kafka's ZooKeeper-mode
brokers answer): it marks each topic under /admin/delete_topics, deletes its znodes, and every
broker drops its replicas when the topic leaves its view (cluster/member.py). The answer comes
once the controller's own view no longer has the topics, or at timeout_ms (REQUEST_TIMED_OUT).

controller_mutation_rate counts the partitions deleted: v5+ topics over the quota fail with
THROTTLING_QUOTA_EXCEEDED, older versions are only throttled (quotas/mutations.py). v6, which
may name topics by id, is not served.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError
from ..quotas.mutations import mutation_quota
from ..security.checks import DELETE, denied_topics
from ._txn_common import respond_later

API_KEY = 20
VERSIONS = (0, 5)           # v4 is the first flexible version, v5 the first strict-quota one


def handle(broker, ctx, request):
    # with deletion disabled every topic answers that, authorized or not (as Kafka)
    denied = denied_topics(broker, ctx, DELETE, request["topic_names"]) \
        if broker.config.get("delete.topic.enable") else ()
    quota = mutation_quota(broker, ctx)
    if broker.cluster is not None:
        return _in_cluster(broker, request, denied, quota)
    results = []
    for name in request["topic_names"]:
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(res)
        if name in denied:
            res["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        try:
            t = broker.store.get(name)
            if t is not None and broker.config.get("delete.topic.enable"):
                quota.record(t.partitions)
            broker.delete_topic(name)
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(API_KEY, e.name)
    return {"throttle_time_ms": quota.throttle_time_ms(), "responses": results}


def _in_cluster(broker, request, denied, quota):
    names = [n for n in dict.fromkeys(request["topic_names"]) if n not in denied]
    member = broker.cluster

    async def run():
        if not broker.config.get("delete.topic.enable"):
            return {n: (ErrorCode.TOPIC_DELETION_DISABLED,
                        "topic deletion is disabled (delete.topic.enable=false)") for n in names}
        try:
            errors = await member.delete_topics(names, request["timeout_ms"], quota)
        except KafkaError as e:
            return {n: (e.code, e.message) for n in names}
        out = {}
        for n in names:
            e = errors.get(n)
            if e is not None:
                out[n] = (e.code, e.message)
            elif n in member.snapshot.topics:
                out[n] = (ErrorCode.REQUEST_TIMED_OUT, "marked for deletion; not deleted yet")
            else:
                out[n] = (ErrorCode.NONE, None)
        return out

    def build(codes) -> dict:
        results = []
        for n in request["topic_names"]:
            code, message = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None) if n in denied else \
                (codes or {}).get(n, (ErrorCode.REQUEST_TIMED_OUT, None))
            results.append({"name": n, "error_code": code, "error_message": message})
            if code:
                broker.metrics.error(API_KEY, ErrorCode(code).name)
        return {"throttle_time_ms": quota.throttle_time_ms(), "responses": results}
    return respond_later(run(), build)
