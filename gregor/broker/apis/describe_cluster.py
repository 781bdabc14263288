"""DescribeCluster (60): cluster id, controller and brokers, for admin clients that prefer it
to Metadata (librdkafka's DescribeCluster, Java's describeCluster). Flexible from v0; the
schema engine and request header v2 handle that like any other version."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import cluster_authorized_operations

API_KEY = 60
VERSIONS = (0, 1)
BROKERS_ENDPOINT = 1          # v1: endpoint_type 1 = brokers (2 = controllers)
NO_AUTHORIZED_OPS = -2147483648


def handle(broker, ctx, request) -> dict:
    host, port = broker.endpoint(ctx.listener)
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": BROKERS_ENDPOINT, "cluster_id": broker.cluster_id,
            "controller_id": broker.broker_id,
            "brokers": [{"broker_id": broker.broker_id, "host": host, "port": port,
                         "rack": None}],
            "cluster_authorized_operations": cluster_authorized_operations(broker, ctx)
            if request.get("include_cluster_authorized_operations") else NO_AUTHORIZED_OPS}
    if broker.cluster is not None:
        from ..cluster.metadata_api import describe_cluster
        body.update(describe_cluster(broker.cluster, ctx.listener))
    if request.get("endpoint_type", BROKERS_ENDPOINT) != BROKERS_ENDPOINT:
        body["error_code"] = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        body["error_message"] = "only broker endpoints (endpoint_type 1) can be described"
        body["brokers"] = []
    return body
