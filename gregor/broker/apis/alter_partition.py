"""AlterPartition (56, KIP-497): a partition leader asks the controller to change the ISR
(cluster/controller.py). Brokers that are not the controller answer NOT_CONTROLLER, as does a
broker outside a cluster."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._txn_common import respond_later

API_KEY = 56
VERSIONS = (0, 3)


def handle(broker, ctx, request):
    if cluster_denied(broker, ctx, CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "topics": []}
    if broker.cluster is None or not broker.cluster.controller.active:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}
    return respond_later(broker.cluster.controller.alter_partition(request, ctx.api_version),
                         lambda body: body or {"throttle_time_ms": 0,
                                               "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                               "topics": []})
