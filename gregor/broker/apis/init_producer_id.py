"""InitProducerId (22): a producer id and epoch for an idempotent producer.

Without a transactional id every call gets a fresh id at epoch 0, allocated so that ids stay
unique across restarts (see producer_ids.py); this is what Kafka does for idempotent
producers, which bump their epoch themselves (the log accepts a higher epoch starting again at
sequence 0). Epoch bumps by the broker belong to transactional ids, and transactions belong to
their own issue: transactional ids are refused here.
"""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode

log = logging.getLogger("gregor.broker.init_producer_id")

API_KEY = 22
VERSIONS = (0, 1)           # v2 is the first flexible version


def handle(broker, ctx, request) -> dict:
    if request["transactional_id"] is not None:
        return {"throttle_time_ms": 0,
                "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    try:
        new_pid = broker.producer_ids.next_id()
    except OSError as e:
        log.error("could not persist the producer id block: %s", e)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.KAFKA_STORAGE_ERROR,
                "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": new_pid,
            "producer_epoch": 0}
