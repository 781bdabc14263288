"""The transactional producer's state: Kafka's TransactionManager, sans-I/O.

It extends idempotence (producer id, epoch, sequences) with a transactional id, the coordinator
it talks to, the partitions of the current transaction and a queue of coordinator requests
(InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn). The user's
thread enqueues requests and waits on their `TxnResult`; the sender thread asks
`next_request()` for what to send and hands back the answer with `on_response()`.

Batches leave only for partitions already added to the transaction: `can_send()` holds back a
batch of a new partition and queues the partition for AddPartitionsToTxn, so send() itself (and
its compiled fast path) does no transactional bookkeeping per record.

Errors follow Kafka's split:
- fatal (the producer must be closed): fenced by a newer instance (PRODUCER_FENCED /
  INVALID_PRODUCER_EPOCH), TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_TXN_STATE and other
  protocol violations;
- abortable (abort_transaction(), then go on): a record that could not be written, a partition
  that cannot be added, an offset commit refused for a stale group generation.
"""
from __future__ import annotations

import logging
import threading
from collections import deque

from ...protocol.errors import ErrorCode, error_for_code
from ..errors import ClientError, KafkaTimeoutError
from .idempotence import FATAL, READY, IdempotenceManager

log = logging.getLogger("gregor.client.producer.txn")
E = ErrorCode

# Transactional states (Java's TransactionManager.State).
UNINITIALIZED, INITIALIZING, READY_TXN, IN_TRANSACTION, COMMITTING, ABORTING, \
    ABORTABLE_ERROR, FATAL_ERROR = ("uninitialized", "initializing", "ready", "in_transaction",
                                    "committing", "aborting", "abortable_error", "fatal_error")

_COORDINATOR_ERRORS = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE}
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS, E.REQUEST_TIMED_OUT,
          E.UNKNOWN_TOPIC_OR_PARTITION}
_FENCED = {E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH}
_FATAL = _FENCED | {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE,
                    E.INVALID_PRODUCER_ID_MAPPING, E.UNSUPPORTED_VERSION,
                    E.INVALID_TRANSACTION_TIMEOUT, E.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                    E.CLUSTER_AUTHORIZATION_FAILED}


class TransactionError(ClientError):
    """A transactional call failed. `fatal`: close the producer (e.g. fenced by a newer
    instance with the same transactional.id). `abortable`: call abort_transaction() and go on.
    Otherwise the call may simply be retried."""

    def __init__(self, message: str, *, fatal: bool = False, abortable: bool = False,
                 cause: BaseException | None = None):
        super().__init__(message)
        self.fatal = fatal
        self.abortable = abortable
        self.cause = cause

    def txn_requires_abort(self) -> bool:       # confluent-kafka's spelling
        return self.abortable


class TxnResult:
    """Completion of one transactional step, waited on by the user's thread."""

    def __init__(self):
        self._event = threading.Event()
        self.error: BaseException | None = None

    def done(self, error: BaseException | None = None) -> None:
        self.error = error
        self._event.set()

    def wait(self, timeout: float | None, what: str) -> None:
        if not self._event.wait(timeout):
            raise KafkaTimeoutError(f"{what} did not finish within {timeout} s; call it again "
                                    "to keep waiting")
        if self.error is not None:
            raise self.error


class TxnRequest:
    """One coordinator request: what to send, to which coordinator, and what its answer does."""

    def __init__(self, api: str, body: dict, result: TxnResult | None, *,
                 coordinator: str = "txn", group_id: str | None = None):
        self.api = api
        self.body = body
        self.result = result
        self.coordinator = coordinator     # "txn" or "group"
        self.group_id = group_id


class TransactionManager(IdempotenceManager):
    transactional = True

    def __init__(self, transactional_id: str, timeout_ms: int):
        super().__init__()
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.txn_state = UNINITIALIZED
        self.txn_error: TransactionError | None = None
        self.lock = threading.RLock()
        self.coordinators: dict[tuple[str, str], int] = {}   # (kind, key) -> node id
        self.in_txn: set[tuple[str, int]] = set()
        self.pending_partitions: set[tuple[str, int]] = set()
        self.adding: set[tuple[str, int]] = set()
        self.queue: deque[TxnRequest] = deque()
        self.in_flight: TxnRequest | None = None
        self.needs_epoch_bump = False
        self.end_pending = False       # an EndTxn is queued: no new partitions
        self.offsets_added = False
        self.purge_requested = False   # abort: the sender fails every unsent batch

    # -- user-thread API (the Producer's methods call these) --------------------------------

    def _fail_if_fatal(self) -> None:
        if self.txn_state == FATAL_ERROR:
            raise self.txn_error or TransactionError("the producer hit a fatal error",
                                                     fatal=True)

    def init_transactions(self) -> TxnResult:
        with self.lock:
            self._fail_if_fatal()
            if self.txn_state not in (UNINITIALIZED, INITIALIZING):
                raise TransactionError("init_transactions() was already called")
            self.txn_state = INITIALIZING
            r = TxnResult()
            self.queue.append(self._init_request(r))
            return r

    def _init_request(self, r: TxnResult | None) -> TxnRequest:
        bump = self.needs_epoch_bump and self.producer_id >= 0
        return TxnRequest("InitProducerId", {
            "transactional_id": self.transactional_id,
            "transaction_timeout_ms": self.timeout_ms,
            "producer_id": self.producer_id if bump else -1,
            "producer_epoch": self.producer_epoch if bump else -1}, r)

    def begin_transaction(self) -> None:
        with self.lock:
            self._fail_if_fatal()
            if self.txn_state != READY_TXN:
                raise TransactionError(f"begin_transaction() needs a ready producer; the "
                                       f"producer is {self.txn_state.replace('_', ' ')}"
                                       + (" (call init_transactions() first)"
                                          if self.txn_state == UNINITIALIZED else ""))
            self.txn_state = IN_TRANSACTION
            self.in_txn.clear()
            self.offsets_added = False

    def check_can_send(self) -> None:
        """send() outside a transaction is a programming error, as in Kafka."""
        st = self.txn_state
        if st == IN_TRANSACTION:
            return
        self._fail_if_fatal()
        if st == ABORTABLE_ERROR:
            raise self.txn_error
        raise TransactionError(f"send() of a transactional producer must be inside a "
                               f"transaction (begin_transaction()); the producer is "
                               f"{st.replace('_', ' ')}")

    def send_offsets(self, offsets: list[tuple[str, int, int, str | None]],
                     group: dict) -> TxnResult:
        """AddOffsetsToTxn for the group, then TxnOffsetCommit of the offsets to the group's
        coordinator. group: group_id, generation_id, member_id, group_instance_id."""
        with self.lock:
            self.check_can_send()
            r = TxnResult()
            gid = group["group_id"]
            self.queue.append(TxnRequest("AddOffsetsToTxn", {
                "transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "group_id": gid}, None))
            by_topic: dict[str, list] = {}
            for topic, partition, offset, metadata in offsets:
                by_topic.setdefault(topic, []).append({
                    "partition_index": partition, "committed_offset": offset,
                    "committed_leader_epoch": -1, "committed_metadata": metadata})
            self.queue.append(TxnRequest("TxnOffsetCommit", {
                "transactional_id": self.transactional_id, "group_id": gid,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "generation_id": group.get("generation_id", -1),
                "member_id": group.get("member_id", ""),
                "group_instance_id": group.get("group_instance_id"),
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                r, coordinator="group", group_id=gid))
            return r

    def begin_commit(self) -> TxnResult:
        return self._begin_end(True)

    def begin_abort(self) -> TxnResult:
        return self._begin_end(False)

    def _begin_end(self, commit: bool) -> TxnResult:
        with self.lock:
            self._fail_if_fatal()
            st = self.txn_state
            if commit and st == ABORTABLE_ERROR:
                raise self.txn_error
            ok = (IN_TRANSACTION, COMMITTING) if commit else (IN_TRANSACTION, ABORTING,
                                                             ABORTABLE_ERROR)
            if st not in ok:
                raise TransactionError(f"{'commit' if commit else 'abort'}_transaction() "
                                       f"needs an open transaction; the producer is "
                                       f"{st.replace('_', ' ')}")
            self.txn_state = COMMITTING if commit else ABORTING
            if not commit:
                self.purge_requested = True
            r = TxnResult()
            if not self.in_txn and not self.pending_partitions and not self.adding \
                    and not self.offsets_added:
                # Nothing reached the coordinator: the transaction ends here (as librdkafka).
                self._ended(r)
                return r
            self.end_pending = True
            self.queue.append(TxnRequest("EndTxn", {
                "transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "committed": commit}, r))
            return r

    # -- the sender's side ----------------------------------------------------------------

    def can_send(self, batch) -> bool:
        if self.state != READY or self.txn_state not in (IN_TRANSACTION, COMMITTING):
            return False
        tp = (batch.topic, batch.partition)
        if tp in self.in_txn:
            return super().can_send(batch)
        with self.lock:
            if tp not in self.adding:
                self.pending_partitions.add(tp)
        return False

    def request_bump(self, why: str) -> None:
        # A transactional producer recovers from sequence trouble by aborting; the abort then
        # bumps the epoch (KIP-360) so the next transaction starts clean.
        with self.lock:
            self.needs_epoch_bump = True
            self.abortable(TransactionError(f"the transaction must be aborted: {why}",
                                            abortable=True))

    def on_batch_failed(self, err: BaseException, code: int | None) -> None:
        """A batch of the transaction failed for good."""
        if code in _FENCED:
            self.fatal(TransactionError(
                f"fenced: another producer with transactional.id {self.transactional_id!r} "
                "took over; close this producer", fatal=True, cause=err))
        else:
            self.abortable(TransactionError(f"a record of the transaction could not be "
                                            f"written ({err}); abort the transaction",
                                            abortable=True, cause=err))

    def abortable(self, err: TransactionError) -> None:
        with self.lock:
            if self.txn_state in (IN_TRANSACTION, COMMITTING):
                self.txn_state = ABORTABLE_ERROR
                self.txn_error = err
                log.warning("%s", err)

    def fatal(self, err: TransactionError) -> None:
        with self.lock:
            self.txn_state = FATAL_ERROR
            self.state = FATAL
            self.txn_error = err
            self.fatal_error = err
            pending = list(self.queue) + ([self.in_flight] if self.in_flight else [])
            self.queue.clear()
            self.in_flight = None
        log.error("%s", err)
        for req in pending:
            if req.result is not None:
                req.result.done(err)

    def next_request(self, flushed: bool) -> TxnRequest | None:
        """What the sender should send next (one coordinator request at a time). `flushed`:
        no batch of the transaction is waiting or in flight (EndTxn waits for that)."""
        with self.lock:
            if self.in_flight is not None or self.txn_state == FATAL_ERROR:
                return None
            if self.pending_partitions and self.txn_state in (IN_TRANSACTION, COMMITTING):
                parts = sorted(self.pending_partitions)
                self.adding |= self.pending_partitions
                self.pending_partitions.clear()
                by_topic: dict[str, list[int]] = {}
                for t, p in parts:
                    by_topic.setdefault(t, []).append(p)
                self.in_flight = TxnRequest("AddPartitionsToTxn", {
                    "v3_and_below_transactional_id": self.transactional_id,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.producer_epoch,
                    "v3_and_below_topics": [{"name": t, "partitions": ps}
                                            for t, ps in by_topic.items()]}, None)
                return self.in_flight
            if not self.queue:
                return None
            req = self.queue[0]
            if req.api == "EndTxn" and not (flushed and not self.adding):
                return None
            self.queue.popleft()
            if req.api in ("AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"):
                # the id and epoch may have changed since the request was queued
                req.body["producer_id"] = self.producer_id
                req.body["producer_epoch"] = self.producer_epoch
            self.in_flight = req
            return req

    def coordinator_key(self, req: TxnRequest) -> tuple[str, str]:
        if req.coordinator == "group":
            return ("group", req.group_id)
        return ("txn", self.transactional_id)

    def put_back(self, req: TxnRequest) -> None:
        """The sender could not send req yet (no coordinator, no connection)."""
        with self.lock:
            self._requeue(req)

    def on_transport_error(self, req: TxnRequest) -> None:
        """The request never got an answer: find the coordinator again and resend."""
        with self.lock:
            self.coordinators.pop(self.coordinator_key(req), None)
            self._requeue(req)

    def _requeue(self, req: TxnRequest) -> None:
        if self.in_flight is req:
            self.in_flight = None
        if req.api == "AddPartitionsToTxn":
            parts = {(t["name"], p) for t in req.body["v3_and_below_topics"]
                     for p in t["partitions"]}
            self.adding -= parts
            self.pending_partitions |= parts
        else:
            self.queue.appendleft(req)

    def on_response(self, req: TxnRequest, body: dict) -> str:
        """Apply an answer. Returns "ok", "retry" (back off, then resend), "lookup" (find the
        coordinator again first) or "fatal"."""
        handler = getattr(self, "_on_" + req.api)
        with self.lock:
            if self.in_flight is req:
                self.in_flight = None
            outcome = handler(req, body)
            if outcome in ("retry", "lookup"):
                if outcome == "lookup":
                    self.coordinators.pop(self.coordinator_key(req), None)
                self._requeue(req)
            return outcome

    def _error(self, req, code: int, message: str | None = None) -> str:
        if code in _COORDINATOR_ERRORS:
            return "lookup"
        if code in _RETRY:
            return "retry"
        err = error_for_code(code, message)
        if code in _FATAL:
            what = ("fenced: another producer with transactional.id "
                    f"{self.transactional_id!r} took over; close this producer"
                    if code in _FENCED else f"{req.api} failed with {err.name}")
            fatal = TransactionError(what, fatal=True, cause=err)
            self.fatal(fatal)
            if req.result is not None:
                req.result.done(fatal)
            return "fatal"
        ab = TransactionError(f"{req.api} failed with {err.name}; abort the transaction",
                              abortable=True, cause=err)
        if req.api == "AddPartitionsToTxn":
            # these partitions never joined: their batches are failed by the abort
            self.adding -= {(t["name"], p) for t in req.body["v3_and_below_topics"]
                            for p in t["partitions"]}
        if req.api == "EndTxn" and self.txn_state == ABORTING:
            self.fatal(TransactionError(f"aborting failed with {err.name}", fatal=True,
                                        cause=err))
            req.result.done(self.txn_error)
            return "fatal"
        self.abortable(ab)
        if req.result is not None:
            req.result.done(ab)
        return "ok"

    def _on_InitProducerId(self, req, body) -> str:
        code = body["error_code"]
        if code:
            return self._error(req, code)
        old = (self.producer_id, self.producer_epoch)
        self.on_init_response(body["producer_id"], body["producer_epoch"])
        self.needs_epoch_bump = False
        log.info("transactional id %r: producer id %d, epoch %d (was %s/%s)",
                 self.transactional_id, self.producer_id, self.producer_epoch, *old)
        self.txn_state = READY_TXN
        if req.result is not None:
            req.result.done()
        return "ok"

    def _on_AddPartitionsToTxn(self, req, body) -> str:
        codes = {(t["name"], p["partition_index"]): p["partition_error_code"]
                 for t in body["results_by_topic_v3_and_below"]
                 for p in t["results_by_partition"]}
        worst = next((c for c in codes.values() if c and c != E.OPERATION_NOT_ATTEMPTED),
                     E.NONE)
        if worst == E.NONE and any(codes.values()):
            worst = E.OPERATION_NOT_ATTEMPTED
        if worst:
            return self._error(req, worst)
        self.adding -= set(codes)
        self.in_txn |= set(codes)
        return "ok"

    def _on_AddOffsetsToTxn(self, req, body) -> str:
        code = body["error_code"]
        if code:
            return self._error(req, code)
        self.offsets_added = True
        return "ok"

    def _on_TxnOffsetCommit(self, req, body) -> str:
        codes = [p["error_code"] for t in body["topics"] for p in t["partitions"]]
        code = next((c for c in codes if c), E.NONE)
        if code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.FENCED_INSTANCE_ID):
            # Kafka's CommitFailedException: the consumer lost its partitions meanwhile.
            err = TransactionError(f"the group {req.group_id!r} moved on (rebalance) before "
                                   f"the offsets were committed ({error_for_code(code).name});"
                                   " abort the transaction", abortable=True,
                                   cause=error_for_code(code))
            self.abortable(err)
            req.result.done(err)
            return "ok"
        if code:
            return self._error(req, code)
        req.result.done()
        return "ok"

    def _on_EndTxn(self, req, body) -> str:
        code = body["error_code"]
        if code:
            return self._error(req, code)
        self._ended(req.result)
        return "ok"

    def _ended(self, r: TxnResult) -> None:
        self.in_txn.clear()
        self.pending_partitions.clear()
        self.adding.clear()
        self.end_pending = False
        self.offsets_added = False
        self.txn_error = None
        if self.needs_epoch_bump:
            # KIP-360: the aborted transaction left sequences unknown; a new epoch first.
            self.txn_state = INITIALIZING
            self.queue.appendleft(self._init_request(r))
            return
        self.txn_state = READY_TXN
        r.done()
