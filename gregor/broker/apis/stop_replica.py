"""StopReplica (5): the controller tells this broker to stop (and delete) replicas
(cluster/controller_requests.py). Outside a cluster: STALE_CONTROLLER_EPOCH."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._txn_common import respond_later

API_KEY = 5
VERSIONS = (3, 4)


def handle(broker, ctx, request):
    def build(result):
        code, errors = result if result is not None else (ErrorCode.UNKNOWN_SERVER_ERROR, [])
        return {"error_code": code, "partition_errors": errors}
    if cluster_denied(broker, ctx, CLUSTER_ACTION):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return build((code, [{"topic_name": t["topic_name"], "partition_index":
                              p["partition_index"], "error_code": code}
                             for t in request["topic_states"] for p in t["partition_states"]]))
    if broker.cluster is None:
        return build((ErrorCode.STALE_CONTROLLER_EPOCH, []))
    return respond_later(broker.cluster.on_stop_replica(request), build)
