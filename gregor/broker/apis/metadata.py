"""Metadata (3): brokers, controller, cluster id, and topics with their partitions.

This broker is the only broker, the controller, and leader / only replica / whole ISR of every
partition. Topics asked for by name that do not exist are created when
auto.create.topics.enable is on and the request allows it (v4+; always allowed before v4) and
are returned ready to use (no LEADER_NOT_AVAILABLE round trip: the leader exists at once).

Versions up to 12 (flexible from 9). librdkafka trusts the leader epochs of a Metadata
response only from v9 on, and uses them to tell a newer leader from a stale answer after a
failover; v10+ carry topic ids, and v12 may ask for a topic by id alone (UNKNOWN_TOPIC_ID when
no topic has it).
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..metadata_common import INTERNAL, NO_AUTHORIZED_OPS, requested_names, unknown_topic_id
from ..topics import topic_name_error
from ._metadata_authz import add_authorized_operations, authorized_metadata

API_KEY = 3
VERSIONS = (0, 13)    # v13 adds only a top-level error code (KIP-1102): always NONE here


def handle(broker, ctx, request) -> dict:
    version = ctx.api_version
    if broker.authorizer is None:
        body = _describe_topics(broker, ctx, version, request)
    else:
        body = authorized_metadata(
            broker, ctx, version, request,
            lambda req: _describe_topics(broker, ctx, version, req), _exists(broker),
            lambda: _topic_ids(broker))
    add_authorized_operations(broker, ctx, version, request, body)
    return body


def _describe_topics(broker, ctx, version: int, request) -> dict:
    if broker.cluster is not None:
        from ..cluster.metadata_api import metadata
        return metadata(broker.cluster, version, request, ctx.listener)
    requested = request["topics"]
    if requested is None or (version == 0 and not requested):
        names = sorted(t.name for t in broker.store.live())
        allow_create = False
    else:
        names = requested_names(requested, lambda: _topic_ids(broker))
        allow_create = request.get("allow_auto_topic_creation", True) if version >= 4 else True
    topics = []
    for name in names:
        topics.append(unknown_topic_id(name) if isinstance(name, bytes) else
                      _describe(broker, name, allow_create))
    host, port = broker.endpoint(ctx.listener)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.broker_id, "host": host, "port": port, "rack": None}],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.broker_id,
        "topics": topics,
        "cluster_authorized_operations": NO_AUTHORIZED_OPS,
        "error_code": ErrorCode.NONE,
    }


def _exists(broker):
    if broker.cluster is not None:
        snap = broker.cluster.snapshot
        return lambda name: name in snap.topics
    return lambda name: broker.store.get(name) is not None


def _topic_ids(broker) -> dict[bytes, str]:
    if broker.cluster is not None:
        from ..cluster.znodes import topic_id_bytes
        return {topic_id_bytes(v.assignment.topic_id): n
                for n, v in broker.cluster.snapshot.topics.items()
                if not v.deleting and v.assignment.topic_id}
    return {t.topic_id_bytes: t.name for t in broker.store.live()}


def _describe(broker, name, allow_create: bool) -> dict:
    t = broker.store.get(name) if name is not None else None
    entry = {"error_code": ErrorCode.NONE, "name": name, "is_internal": name in INTERNAL,
             "partitions": [], "topic_authorized_operations": NO_AUTHORIZED_OPS}
    if t is None:
        if name is None or topic_name_error(name):
            entry["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
            return entry
        if allow_create:
            try:
                t = broker.maybe_auto_create(name)
            except Exception:
                t = None
        if t is None:
            entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return entry
    entry["topic_id"] = t.topic_id_bytes
    rm = broker.replica_manager
    for p in rm.topic_partitions(name):
        entry["partitions"].append({
            "error_code": ErrorCode.NONE, "partition_index": p.index,
            "leader_id": broker.broker_id, "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr),
            "offline_replicas": [],
        })
    return entry
