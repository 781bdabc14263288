"""FindCoordinator (10): which broker coordinates a consumer group or a transactional id.

For groups the answer is this broker (the only one). The group APIs themselves (JoinGroup,
OffsetCommit, ...) belong to the consumer-group issue and are not advertised until they exist;
clients check the ApiVersions table before using them. Serving this API matters beyond groups:
librdkafka enables LZ4 compression (and other 0.8.2-era features) only when the broker
advertises FindCoordinator v0. Transactions are not supported, so transactional ids get
COORDINATOR_NOT_AVAILABLE.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode

API_KEY = 10
VERSIONS = (0, 2)           # v3 is the first flexible version
GROUP, TRANSACTION = 0, 1


def handle(broker, ctx, request) -> dict:
    key_type = request.get("key_type", GROUP)
    if key_type == TRANSACTION:
        if broker.txn_coordinator is None:      # creates __transaction_state on first use
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    "error_message": "the transaction coordinator is not running",
                    "node_id": -1, "host": "", "port": -1}
    elif key_type != GROUP:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": f"unknown coordinator key type {key_type}",
                "node_id": -1, "host": "", "port": -1}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "node_id": broker.broker_id, "host": broker.advertised_host,
            "port": broker.advertised_port}
