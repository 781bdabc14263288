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

from typing import Callable

from ...protocol.errors import ErrorCode
from ..topics import topic_name_error
from ._metadata_authz import add_authorized_operations, authorized_metadata

API_KEY = 3
VERSIONS = (0, 12)
INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})
NO_AUTHORIZED_OPS = -2147483648


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


ZERO_ID = bytes(16)


def requested_names(requested: list[dict], ids: Callable[[], dict[bytes, str]]) -> list:
    """The names asked for; a topic asked for by id alone (v12) is looked up in ids() (built
    only then), and stays bytes (its id) when no topic has it."""
    out, by_id = [], None
    for t in requested:
        name, topic_id = t.get("name"), t.get("topic_id") or ZERO_ID
        if name is None and topic_id != ZERO_ID:
            by_id = ids() if by_id is None else by_id
            name = by_id.get(topic_id, topic_id)
        out.append(name)
    return out


def unknown_topic_id(topic_id: bytes) -> dict:
    return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id,
            "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_AUTHORIZED_OPS}


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
