"""FindCoordinator (10): which broker coordinates a consumer group or a transactional id.

On a single node it is always this broker; the first lookup of a kind creates its internal
topic (`__consumer_offsets` or `__transaction_state`), as Kafka does. In a cluster a group's
coordinator is the leader of its partition of `__consumer_offsets` (created through ZooKeeper on
the first lookup; COORDINATOR_NOT_AVAILABLE, which clients retry, until it has leaders).
Transactional ids likewise, on `__transaction_state`. v4+ asks for a batch of
keys at once. Serving v0 matters beyond groups: librdkafka enables LZ4 compression (and other
0.8.2-era features) only when the broker advertises FindCoordinator v0.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..security.checks import DESCRIBE, GROUP as GROUP_RESOURCE, TRANSACTIONAL_ID, allowed

API_KEY = 10
VERSIONS = (0, 4)           # v5 adds TRANSACTION_ABORTABLE, v6 share groups
GROUP, TRANSACTION = 0, 1


def _denied(broker, ctx, key: str, key_type: int) -> tuple[int, str] | None:
    """DESCRIBE on the group / transactional id (Kafka's KafkaApis.getCoordinator)."""
    if key_type == GROUP and not allowed(broker, ctx, DESCRIBE, GROUP_RESOURCE, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, f"the principal may not DESCRIBE group " \
                                                     f"{key!r}"
    if key_type == TRANSACTION and not allowed(broker, ctx, DESCRIBE, TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, \
            f"the principal may not DESCRIBE transactional id {key!r}"
    return None


def _find(broker, key: str, key_type: int, listener: str | None) -> tuple[int, str | None]:
    if key_type == TRANSACTION:
        coord = broker.txn_coordinator
        if coord is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the transaction coordinator is not running"
        if broker.cluster is not None:
            if not key:
                return ErrorCode.INVALID_REQUEST, "the transactional id is empty"
            return _in_cluster(broker, "__transaction_state", coord.partition_for(key),
                               listener)
        return ErrorCode.NONE, None
    if key_type == GROUP:
        coord = broker.group_coordinator
        if coord is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not running"
        if not key:
            return ErrorCode.INVALID_REQUEST, "the group id is empty"
        if broker.cluster is not None:
            return _in_cluster(broker, "__consumer_offsets", coord.partition_of(key), listener)
        code = coord.group_status(key)
        return (code, None) if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else \
            (ErrorCode.NONE, None)
    return ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}"


def _in_cluster(broker, topic: str, partition: int, listener: str | None):
    """The leader of the key's partition of the coordinator's internal topic, as reached on
    the listener the request came in on."""
    leader, info = broker.cluster.coordinator_for(topic, partition)
    endpoint = None if info is None else info.endpoint(listener)
    if endpoint is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, (
            f"{topic} is being created or its partition for this key has no leader yet")
    return ErrorCode.NONE, (leader, *endpoint)


def handle(broker, ctx, request) -> dict:
    key_type = request.get("key_type", GROUP)
    if ctx.api_version >= 4:
        coordinators = []
        for key in request["coordinator_keys"]:
            code, message = _denied(broker, ctx, key, key_type) or \
                _find(broker, key, key_type, ctx.listener)
            coordinators.append({"key": key, "error_code": code,
                                 **_node(broker, code, message, ctx.listener)})
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    code, message = _denied(broker, ctx, request["key"], key_type) or \
        _find(broker, request["key"], key_type, ctx.listener)
    return {"throttle_time_ms": 0, "error_code": code, **_node(broker, code, message,
                                                             ctx.listener)}


def _node(broker, code: int, found, listener: str | None) -> dict:
    """found: an error message, or (node id, host, port) of another broker, or None (us)."""
    if code:
        return {"error_message": found, "node_id": -1, "host": "", "port": -1}
    if isinstance(found, tuple):
        node, host, port = found
        return {"error_message": None, "node_id": node, "host": host, "port": port}
    host, port = broker.endpoint(listener)
    return {"error_message": None, "node_id": broker.broker_id, "host": host, "port": port}
