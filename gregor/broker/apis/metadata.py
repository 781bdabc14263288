"""Metadata (3): brokers, controller, cluster id, and topics with their partitions.

This broker is the only broker, the controller, and leader / only replica / whole ISR of every
partition. Topics asked for by name that do not exist are created when
auto.create.topics.enable is on and the request allows it (v4+; always allowed before v4) and
are returned ready to use (no LEADER_NOT_AVAILABLE round trip: the leader exists at once).
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..topics import topic_name_error

API_KEY = 3
# v9 is the first flexible version; v10+ carries topic ids, v12 lets a request name topics by
# id only: librdkafka's KIP-848 consumer resolves its assignment (topic ids) that way.
VERSIONS = (0, 12)
INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})
NO_AUTHORIZED_OPS = -2147483648


def handle(broker, ctx, request) -> dict:
    version = ctx.api_version
    if broker.cluster is not None:
        from ..cluster.metadata_api import metadata
        return metadata(broker.cluster, version, request)
    requested = request["topics"]
    if requested is None or (version == 0 and not requested):
        names = sorted(t.name for t in broker.store.live())
        allow_create = False
    else:
        names = [t["name"] if t["name"] is not None or version < 10 else
                 by_id(broker.store.live(), t["topic_id"]) for t in requested]
        allow_create = request.get("allow_auto_topic_creation", True) if version >= 4 else True
    topics = []
    for name in names:
        if isinstance(name, bytes):
            topics.append(unknown_id(name))
            continue
        topics.append(_describe(broker, name, allow_create))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.broker_id, "host": broker.advertised_host,
                     "port": broker.advertised_port, "rack": None}],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.broker_id,
        "topics": topics,
        "cluster_authorized_operations": NO_AUTHORIZED_OPS,
    }


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


def by_id(live, topic_id) -> str | bytes:
    """The name of the live topic with this id, or the id itself when none has it."""
    hex_id = bytes(topic_id or b"").hex()
    for t in live:
        if t.topic_id == hex_id:
            return t.name
    return bytes(topic_id or bytes(16))


def unknown_id(topic_id: bytes) -> dict:
    return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id,
            "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_AUTHORIZED_OPS}
