"""InitProducerId (22): a producer id and epoch for an idempotent producer.

Without a transactional id every call gets a fresh id at epoch 0, allocated so that ids stay
unique across restarts (see producer_ids.py). When a client names its current id and epoch
(v3+), the epoch is bumped instead, as Kafka does to let an idempotent producer recover from a
sequence error. Transactional ids belong to the transactions issue: they are refused here.
"""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode

log = logging.getLogger("gregor.broker.init_producer_id")

API_KEY = 22
VERSIONS = (0, 1)           # v2 is the first flexible version
MAX_EPOCH = 32767


def handle(broker, ctx, request) -> dict:
    if request["transactional_id"] is not None:
        return {"throttle_time_ms": 0,
                "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    pid, epoch = request.get("producer_id", -1), request.get("producer_epoch", -1)
    if pid >= 0 and epoch >= 0 and epoch < MAX_EPOCH - 1:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "producer_id": pid, "producer_epoch": epoch + 1}
    try:
        new_pid = broker.producer_ids.next_id()
    except OSError as e:
        log.error("could not persist the producer id block: %s", e)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.KAFKA_STORAGE_ERROR,
                "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": new_pid,
            "producer_epoch": 0}
