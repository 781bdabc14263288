"""Cluster-level authorization of the SCRAM credential APIs (KafkaApis: DescribeUserScram-
Credentials needs DESCRIBE on the CLUSTER resource, AlterUserScramCredentials ALTER), through
the authorizer's checks (checks.py). Without an authorizer every principal is allowed, as in
Kafka."""
from __future__ import annotations

from ...protocol.acl import AclOperation
from .checks import cluster_allowed


def cluster_operation_allowed(broker, ctx, operation: str) -> bool:
    return cluster_allowed(broker, ctx, AclOperation.parse(operation))
