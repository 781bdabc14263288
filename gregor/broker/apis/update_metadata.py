"""UpdateMetadata (6): the controller tells this broker the live brokers and partition states
it answers Metadata from (cluster/controller_requests.py). Outside a cluster:
STALE_CONTROLLER_EPOCH (no controller it knows)."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._txn_common import respond_later

API_KEY = 6
VERSIONS = (5, 8)


def handle(broker, ctx, request):
    if cluster_denied(broker, ctx, CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    if broker.cluster is None:
        return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH}
    return respond_later(broker.cluster.on_update_metadata(request),
                         lambda code: {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR
                                       if code is None else code})
