"""LeaderAndIsr (4): the controller tells this broker which of its replicas lead and which
follow (cluster/controller_requests.py). A broker outside a cluster has no controller and
answers STALE_CONTROLLER_EPOCH, as a request from no controller it knows."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._txn_common import respond_later

API_KEY = 4
VERSIONS = (2, 7)


def handle(broker, ctx, request):
    version = ctx.api_version

    def build(result):
        code, topics = result if result is not None else (ErrorCode.UNKNOWN_SERVER_ERROR, [])
        if version >= 5:
            return {"error_code": code, "topics": topics}
        # one entry per request topic, in the request's order (no topic ids before v5)
        return {"error_code": code, "partition_errors": [
            {"topic_name": req["topic_name"], **pe}
            for req, t in zip(request["topic_states"], topics) for pe in t["partition_errors"]]}
    if cluster_denied(broker, ctx, CLUSTER_ACTION):
        # only the controller may: a client that knows the controller epoch must not move
        # partitions (every partition answers the error, as Kafka's error response)
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return build((code, [{"topic_id": t.get("topic_id", bytes(16)), "partition_errors": [
            {"partition_index": p["partition_index"], "error_code": code}
            for p in t["partition_states"]]} for t in request["topic_states"]]))
    if broker.cluster is None:
        return build((ErrorCode.STALE_CONTROLLER_EPOCH, []))
    if version < 5:
        for t in request["topic_states"]:
            t["topic_id"] = bytes(16)
    return respond_later(broker.cluster.on_leader_and_isr(request), build)
