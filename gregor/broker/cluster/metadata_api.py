"""Metadata and DescribeCluster answered from the broker's metadata cache (UpdateMetadata).

Live brokers are the registered ones; a partition whose leader is not live (or is -1) answers
LEADER_NOT_AVAILABLE with leader -1, which clients retry after refreshing; replicas that are
not live are listed as offline. A topic asked for by name that does not exist is auto-created
when auto.create.topics.enable is on and the request allows it (v4+; always before v4), as
Kafka's ZooKeeper-mode brokers do: this broker writes the assignment, the controller the
partition states, and the topic answers LEADER_NOT_AVAILABLE until they are there.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..metadata_common import INTERNAL, NO_AUTHORIZED_OPS, requested_names, unknown_topic_id
from ..topics import topic_name_error
from .znodes import topic_id_bytes


def brokers(snap, listener: str | None) -> list[dict]:
    """The live brokers as reached on `listener` (the one the request came in on); a broker
    without that listener is left out, as Kafka does."""
    out = []
    for _, b in sorted(snap.brokers.items()):
        endpoint = b.endpoint(listener)
        if endpoint is not None:
            out.append({"node_id": b.broker_id, "host": endpoint[0], "port": endpoint[1],
                        "rack": b.rack})
    return out


def metadata(member, version: int, request: dict, listener: str | None = None) -> dict:
    snap = member.snapshot
    requested = request["topics"]
    allow_create = False
    if requested is None or (version == 0 and not requested):
        names = sorted(n for n, v in snap.topics.items() if not v.deleting)
    else:
        names = requested_names(requested, lambda: {
            topic_id_bytes(v.assignment.topic_id): n for n, v in snap.topics.items()
            if not v.deleting and v.assignment.topic_id})
        allow_create = request.get("allow_auto_topic_creation", True) if version >= 4 else True
    return {"throttle_time_ms": 0, "brokers": brokers(snap, listener),
            "cluster_id": member.cluster_id, "controller_id": snap.controller_id,
            "topics": [unknown_topic_id(name) if isinstance(name, bytes) else
                       _topic(member, snap, name, allow_create) for name in names],
            "cluster_authorized_operations": NO_AUTHORIZED_OPS}


def _topic(member, snap, name, allow_create: bool) -> dict:
    entry = {"error_code": ErrorCode.NONE, "name": name, "is_internal": name in INTERNAL,
             "partitions": [], "topic_authorized_operations": NO_AUTHORIZED_OPS}
    view = snap.topics.get(name) if name is not None else None
    if view is None or view.deleting:
        if name is None or topic_name_error(name):
            entry["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
        elif allow_create and view is None:
            entry["error_code"] = member.maybe_auto_create(name)
        else:
            entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return entry
    entry["topic_id"] = topic_id_bytes(view.assignment.topic_id)
    live = snap.brokers
    for p, replicas in sorted(view.assignment.partitions.items()):
        state = view.states.get(p)
        leader = state.leader if state is not None and state.leader in live else -1
        entry["partitions"].append({
            "error_code": ErrorCode.NONE if leader != -1 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": p, "leader_id": leader,
            "leader_epoch": state.leader_epoch if state is not None else -1,
            "replica_nodes": list(replicas),
            "isr_nodes": list(state.isr) if state is not None else [],
            "offline_replicas": [b for b in replicas if b not in live]})
    return entry


def describe_cluster(member, listener: str | None = None) -> dict:
    snap = member.snapshot
    return {"cluster_id": member.cluster_id, "controller_id": snap.controller_id,
            "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"],
                         "rack": b["rack"]} for b in brokers(snap, listener)]}
