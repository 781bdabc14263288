"""Produce (0): append record batches to partitions.

Reads like the classic handleProducerRequest:
1. acks must be -1, 0 or 1, else every partition gets INVALID_REQUIRED_ACKS;
2. each partition's records are validated and appended on their own: one partition's error
   (unknown partition, corrupt batch, too large, sequence gap, ...) does not stop the others;
3. acks=0: no response at all; if any partition failed, the connection is closed, the only
   signal a fire-and-forget producer can get (it then refreshes metadata);
4. acks=1: respond once the local appends are done;
5. acks=-1: a DelayedProduce waits in the produce purgatory, watched by partition, until the
   high watermark passes each appended batch (NONE), the ISR is found below
   min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND), or the request's timeout passes
   (REQUEST_TIMED_OUT). An ISR already too small refuses the append (NOT_ENOUGH_REPLICAS).
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.errors import (ErrorCode, InvalidTxnStateError, KafkaError,
                               UnknownTopicOrPartitionError, error_for_code)
from ...protocol.records.header import HEADER_SIZE, parse_header
from ..broker import INTERNAL_TOPICS
from ..purgatory import DelayedOperation
from ..record_validation import validate_records
from ..security.checks import (TOPIC, TRANSACTIONAL_ID, WRITE, allowed, denied_topics,
                               may_create_topic, memo_of)
from ..server import NO_RESPONSE, CloseConnection

log = logging.getLogger("gregor.broker.produce")

API_KEY = 0
# v0-v2 carry magic 0/1 message sets (up-converted on the way in); v3+ carry one v2 batch.
# v9 is the first flexible version.
VERSIONS = (0, 8)

# The client id Kafka's own admin tools use; Produce from it may write internal topics.
ADMIN_CLIENT_ID = "__admin_client"


class PartitionResult:
    __slots__ = ("topic", "partition", "error", "message", "base_offset", "last_offset",
                 "log_append_time", "log_start_offset", "pending")

    def __init__(self, topic: str, partition: int):
        self.topic = topic
        self.partition = partition
        self.error = ErrorCode.NONE
        self.message: str | None = None
        self.base_offset = -1
        self.last_offset = -1
        self.log_append_time = -1
        self.log_start_offset = -1
        self.pending = False          # acks=-1: still waiting for the high watermark

    def fail(self, exc: KafkaError) -> None:
        self.error = exc.code
        self.message = exc.message


def handle(broker, ctx, request):
    acks = request["acks"]
    version = ctx.api_version
    results: list[PartitionResult] = []
    tid = request.get("transactional_id")
    if acks not in (-1, 0, 1):
        for topic in request["topic_data"]:
            for pd in topic["partition_data"]:
                r = PartitionResult(topic["name"], pd["index"])
                r.error = ErrorCode.INVALID_REQUIRED_ACKS
                r.message = f"acks={acks} is not one of -1 (all), 0 or 1"
                results.append(r)
        broker.metrics.error(API_KEY, "INVALID_REQUIRED_ACKS")
        return _response(results, version)

    now_ms = int(time.time() * 1000)
    denied, whole = _authorize(broker, ctx, request, tid, version)
    for topic in request["topic_data"]:
        name = topic["name"]
        for pd in topic["partition_data"]:
            r = PartitionResult(name, pd["index"])
            results.append(r)
            if whole or name in denied:
                r.error = whole or ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            try:
                _append_partition(broker, ctx, r, pd["records"], acks, version, now_ms, tid)
            except KafkaError as e:
                r.fail(e)
                broker.metrics.error(API_KEY, e.name)
            except Exception as e:
                log.exception("append to %s-%d failed", name, pd["index"])
                r.error = ErrorCode.KAFKA_STORAGE_ERROR
                r.message = f"the broker could not write to the log: {e}"
                broker.metrics.error(API_KEY, "KAFKA_STORAGE_ERROR")

    if acks == 0:
        failed = [r for r in results if r.error]
        if failed:
            first = failed[0]
            raise CloseConnection(
                f"acks=0 produce to {first.topic}-{first.partition} failed with "
                f"{ErrorCode(first.error).name}"
                + (f" ({first.message})" if first.message else "")
                + f"{' and %d more' % (len(failed) - 1) if len(failed) > 1 else ''}; closing "
                "the connection so the producer notices")
        return NO_RESPONSE

    if acks == 1 or not any(r.pending for r in results):
        for r in results:
            r.pending = False
        return _response(results, version)

    fut = asyncio.get_running_loop().create_future()
    op = DelayedProduce(request["timeout_ms"], broker, results, version, fut)
    keys = [(r.topic, r.partition) for r in results if r.pending]
    broker.replica_manager.produce_purgatory.try_complete_else_watch(op, keys)
    return fut


_WRITE_V, _TOPIC_V = WRITE._value_, TOPIC._value_


def _authorize(broker, ctx, request, tid, version) -> tuple:
    """(topics the principal may not WRITE, or an error for the whole request): transactional
    records need WRITE on their transactional id (Kafka's KafkaApis.handleProduceRequest)."""
    if broker.authorizer is None:
        return (), 0
    topic_data = request["topic_data"]
    if version >= 3 and _has_transactional_records(topic_data) and \
            (tid is None or not allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, tid)):
        return (), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    names = [t["name"] for t in topic_data]
    memo = memo_of(broker.authorizer, ctx)
    for name in names:           # the common case: every topic already allowed on this connection
        if (_WRITE_V, _TOPIC_V, name) not in memo:
            return denied_topics(broker, ctx, WRITE, names), 0
    return (), 0


def _has_transactional_records(topic_data) -> bool:
    """Any v2 batch with the transactional attribute (read from the header's bytes: this runs
    on every produce request when an authorizer is on)."""
    for t in topic_data:
        for pd in t["partition_data"]:
            data = pd["records"]
            # magic at byte 16; attributes (int16) at 21-22, transactional = bit 4
            if data is not None and len(data) >= HEADER_SIZE and data[16] == 2 and \
                    data[22] & 0x10:
                return True
    return False


def _append_partition(broker, ctx, r: PartitionResult, records, acks: int, version: int,
                      now_ms: int, transactional_id: str | None = None) -> None:
    p = broker.replica_manager.get(r.topic, r.partition)
    if broker.cluster is not None and (p is None or not p.is_leader):
        raise error_for_code(broker.cluster.partition_error(r.topic, r.partition))
    if p is None:
        t = broker.store.get(r.topic) or (
            broker.maybe_auto_create(r.topic)
            if broker.authorizer is None or may_create_topic(broker, ctx, r.topic) else None)
        p = broker.replica_manager.get(r.topic, r.partition) if t is not None else None
        if p is None:
            raise UnknownTopicOrPartitionError(
                f"topic {r.topic!r} has no partition {r.partition}" if t is not None else
                f"topic {r.topic!r} does not exist"
                + ("" if broker.config.get("auto.create.topics.enable")
                   else " and auto.create.topics.enable is false; create it first"))
    if r.topic in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
        # Kafka's ReplicaManager: clients never write the coordinators' topics directly (a
        # forged offset commit, transaction or share state); only its own admin tooling may
        raise error_for_code(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Cannot append to internal topic {r.topic}")
    v = validate_records(records, version, p.config, now_ms)
    if version >= 3:
        _check_transactional(broker, transactional_id, v.data, r)
    info = p.append_records_to_leader(v.data, acks, now_ms)
    if not info.duplicate:
        broker.metrics.records_in(v.records)
    r.base_offset = info.base_offset
    r.last_offset = info.last_offset
    r.log_append_time = info.log_append_time_ms
    r.log_start_offset = info.log_start_offset
    r.pending = acks == -1


def _check_transactional(broker, transactional_id, data, r: PartitionResult) -> None:
    """Transactional batches need a transactional id, and (KIP-890 part 1) the partition must
    already be in the producer's ongoing transaction: a late or stray write must never start
    a transaction the coordinator does not know (it would hold the LSO forever)."""
    h = parse_header(data, 0)
    if not h.is_transactional:
        return
    if transactional_id is None:
        raise InvalidTxnStateError(f"a transactional batch for {r.topic}-{r.partition} came "
                                   "without a transactional id")
    coord = broker.txn_coordinator
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE if coord is None else coord.verify_partition(
        transactional_id, h.producer_id, h.producer_epoch, r.topic, r.partition)
    if code == ErrorCode.NOT_COORDINATOR and broker.cluster is not None:
        # the transactional id is coordinated by another broker of the cluster: this leader
        # cannot verify the partition (KIP-890's verification request is not sent), so it
        # accepts the write as brokers did before KIP-890
        return
    if code == ErrorCode.PRODUCER_FENCED:
        code = ErrorCode.INVALID_PRODUCER_EPOCH      # what Produce answers, in every version
    if code:
        raise error_for_code(code, f"{r.topic}-{r.partition} is not part of the ongoing "
                                   f"transaction of {transactional_id!r}"
                             if code == ErrorCode.INVALID_TXN_STATE else None)


class DelayedProduce(DelayedOperation):
    """An acks=all produce waiting for the high watermark of each partition it wrote."""

    def __init__(self, timeout_ms, broker, results, version, future):
        super().__init__(timeout_ms)
        self.broker = broker
        self.results = results
        self.version = version
        self.future = future

    def try_complete(self) -> bool:
        rm = self.broker.replica_manager
        for r in self.results:
            if not r.pending:
                continue
            p = rm.get(r.topic, r.partition)
            if p is None:
                r.pending = False
                r.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                r.message = "the partition was deleted before the write was committed"
                continue
            done, code = p.check_enough_replicas_reach_offset(r.last_offset + 1)
            if done:
                r.pending = False
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    r.error = code
                    r.message = (f"this broker stopped leading {p.topic}-{p.index} before the "
                                 "write was committed; retry on the new leader")
                elif code:
                    r.error = code
                    r.message = (f"written, but {p.topic}-{p.index} has fewer in-sync replicas "
                                 f"than min.insync.replicas={p.min_insync_replicas}")
        if any(r.pending for r in self.results):
            return False
        return self.force_complete()

    def _time_out_pending(self, why: str) -> None:
        for r in self.results:
            if r.pending:
                r.pending = False
                r.error = ErrorCode.REQUEST_TIMED_OUT
                r.message = f"{why}; it may still become visible"
                self.broker.metrics.error(API_KEY, "REQUEST_TIMED_OUT")

    def on_expiration(self) -> None:
        self._time_out_pending("the write was not committed within the request's timeout_ms")

    def on_complete(self) -> None:
        # Forced (at shutdown) before the write was committed: never a success, as Kafka's
        # DelayedProduce answers a partition still waiting with REQUEST_TIMED_OUT.
        self._time_out_pending("the broker stopped before the write was committed")
        if not self.future.done():
            self.future.set_result(_response(self.results, self.version))


def _response(results: list[PartitionResult], version: int) -> dict:
    by_topic: dict[str, list] = {}
    for r in results:
        failed = r.error != ErrorCode.NONE
        by_topic.setdefault(r.topic, []).append({
            "index": r.partition,
            "error_code": r.error,
            "base_offset": -1 if failed else r.base_offset,
            "log_append_time_ms": -1 if failed else r.log_append_time,
            "log_start_offset": r.log_start_offset,
            "record_errors": [],
            "error_message": r.message if failed else None,
        })
    return {"responses": [{"name": t, "partition_responses": ps} for t, ps in by_topic.items()],
            "throttle_time_ms": 0}
