"""InitProducerId (22): a producer id and epoch for an idempotent or transactional producer.

Without a transactional id every call gets a fresh id at epoch 0, allocated so that ids stay
unique across restarts (see producer_ids.py); this is what Kafka does for idempotent producers,
which bump their epoch themselves (the log accepts a higher epoch starting again at sequence 0).

With a transactional id the transaction coordinator answers: the id's producer id with its
epoch bumped (fencing older instances), after aborting a transaction a previous instance left
open (CONCURRENT_TRANSACTIONS meanwhile, which clients retry). v3+ requests may carry the
caller's current producer id and epoch (KIP-360) to recover from an abortable error.
PRODUCER_FENCED exists from v4; older requests get INVALID_PRODUCER_EPOCH instead.
"""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode
from ..security.checks import (IDEMPOTENT_WRITE, TOPIC, TRANSACTIONAL_ID, WRITE, allowed,
                               allowed_on_any, cluster_allowed)
from ._txn_common import coordinator, fenced_for, respond_later

log = logging.getLogger("gregor.broker.init_producer_id")

API_KEY = 22
VERSIONS = (0, 4)           # v2 is the first flexible version; v5 belongs to KIP-890 part 2


def _body(code, pid=-1, epoch=-1) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid,
            "producer_epoch": epoch}


def _authorized(broker, ctx, tid) -> int:
    """Kafka's checks: WRITE on the transactional id; for an idempotent producer
    IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic."""
    if broker.authorizer is None:
        return ErrorCode.NONE
    if tid is not None:
        return ErrorCode.NONE if allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, tid) else \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if cluster_allowed(broker, ctx, IDEMPOTENT_WRITE, log_denied=False) or \
            allowed_on_any(broker, ctx, WRITE, TOPIC):
        return ErrorCode.NONE
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def handle(broker, ctx, request) -> dict:
    tid = request["transactional_id"]
    denied = _authorized(broker, ctx, tid)
    if denied:
        return _body(denied)
    if tid is not None:
        coord = coordinator(broker)
        if coord is None:
            return _body(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        convert = fenced_for(ctx.api_version, 4)
        pid, epoch = request.get("producer_id", -1), request.get("producer_epoch", -1)
        expected = None if pid == -1 and epoch == -1 else (pid, epoch)
        return respond_later(
            coord.init_producer_id(tid, request["transaction_timeout_ms"], expected),
            lambda r: _body(ErrorCode.UNKNOWN_SERVER_ERROR) if r is None
            else _body(convert(r[0]), r[1], r[2]))
    try:
        new_pid = broker.producer_ids.next_id()
    except OSError as e:
        if getattr(e, "retry_later", False):
            # Cluster mode, the next block of ids is still on its way from ZooKeeper.
            return _body(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        log.error("could not persist the producer id block: %s", e)
        return _body(ErrorCode.KAFKA_STORAGE_ERROR)
    return _body(ErrorCode.NONE, new_pid, 0)
