"""DescribeClientQuotas (48): the quota configs of the entities matching a filter (KIP-546).

Read from the entity config store (the data directory's file, or ZooKeeper's /config/users,
/config/clients and /config/ips in a cluster); the filter rules and errors are Kafka's
(gregor/broker/quotas/admin.py). A bad filter fails the whole request with entries null, as
does a principal without DESCRIBE_CONFIGS on the cluster (with an authorizer configured).
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError
from ..quotas.admin import describe
from ..security.checks import describe_client_quotas_denied

API_KEY = 48
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    denied = describe_client_quotas_denied(broker, ctx)
    if denied is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": denied, "entries": None}
    try:
        found = describe(broker.entity_configs.entities(), request["components"],
                         request["strict"])
    except KafkaError as e:
        broker.metrics.error(API_KEY, e.name)
        return {"throttle_time_ms": 0, "error_code": e.code, "error_message": e.message,
                "entries": None}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
        {"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity.items()],
         "values": [{"key": k, "value": v} for k, v in sorted(values.items())]}
        for entity, values in found]}
