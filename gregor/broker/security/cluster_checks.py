"""Cluster-level authorization of the SCRAM credential APIs (KafkaApis: DescribeUserScram-
Credentials needs DESCRIBE on the CLUSTER resource, AlterUserScramCredentials ALTER).

This is the single call site the authorizer plugs into. Without an authorizer configured every
principal is allowed, as in Kafka.
"""
from __future__ import annotations


def cluster_operation_allowed(broker, ctx, operation: str) -> bool:
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None:
        return True
    return bool(authorizer.authorize_cluster(ctx, operation))
