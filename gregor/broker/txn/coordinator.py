"""The transaction coordinator: Kafka's rules for transactional producers, without any I/O.

It owns the transactional ids whose `__transaction_state` partition this broker leads (all of
them on a single node). Three ports connect it to the broker, so tests drive it with fakes:

- `log`: `await log.append(partition, key, value_or_None, coordinator_epoch)` makes one record
  of `__transaction_state` durable (raises a KafkaError if it cannot);
- `markers`: `await markers.write(producer_id, epoch, commit, coordinator_epoch, partitions)`
  writes a COMMIT/ABORT control batch to each partition of a transaction and returns
  {partition: error_code} (0 = written);
- `next_producer_id()`: a cluster-unique producer id.

Every request follows the same shape: check the request against the metadata, prepare a transit
(gregor/broker/txn/state.py), write it, apply it. Ending a transaction answers the client once
PrepareCommit/PrepareAbort is durable (from then on the outcome is decided and survives a
crash), then writes the markers in the background and records CompleteCommit/CompleteAbort.
Until that last record, the id answers CONCURRENT_TRANSACTIONS, which clients retry.

Error codes are the modern ones (PRODUCER_FENCED); the API handlers convert them for old request
versions.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable

from ...protocol.errors import ErrorCode, KafkaError
from ..group.store_errors import STORE_ERRORS
from . import log_records
from .state import (IDLE, NO_PRODUCER_EPOCH, IllegalTransition, TxnMetadata, TxnState,
                    TxnTransit, is_epoch_exhausted)

log = logging.getLogger("gregor.broker.txn")

E = ErrorCode
S = TxnState
TOPIC = "__transaction_state"
# Marker write errors after which the partition is simply left out (it no longer exists).
_MARKER_GIVE_UP = {E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_TOPIC_EXCEPTION}


def java_string_hash(s: str) -> int:
    """Java's String.hashCode of s (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's coordinator partition: Utils.abs(hashCode) % n, where abs(MIN_VALUE) is 0."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


@dataclass
class TxnConfig:
    num_partitions: int = 50                     # transaction.state.log.num.partitions
    max_timeout_ms: int = 900000                 # transaction.max.timeout.ms
    id_expiration_ms: int = 604800000            # transactional.id.expiration.ms (7 days)
    marker_retry_backoff_ms: int = 100           # between attempts at a partition's marker


@dataclass
class _Partition:
    epoch: int
    loading: bool = True
    txns: dict[str, TxnMetadata] = field(default_factory=dict)


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, log_port, marker_port,
                 next_producer_id: Callable[[], int],
                 clock: Callable[[], int] = lambda: int(time.time() * 1000)):
        self.config = config
        self.log = log_port
        self.markers = marker_port
        self.next_producer_id = next_producer_id
        self.clock = clock
        self.partitions: dict[int, _Partition] = {}
        self._tasks: set[asyncio.Task] = set()

    # -- ownership ------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def load_partition(self, partition: int, epoch: int,
                       records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Become the coordinator of a `__transaction_state` partition: replay its records
        (key, value) in log order, then finish what a crash interrupted: transactions found in
        PrepareCommit/PrepareAbort get their markers written again."""
        part = _Partition(epoch)
        self.partitions[partition] = part
        for key, value in records:
            try:
                tid = log_records.decode_key(key)
            except Exception:
                log.warning("skipping an unreadable key in %s-%d", TOPIC, partition)
                continue
            if value is None:
                part.txns.pop(tid, None)
                continue
            try:
                t = log_records.decode_value(value)
            except Exception:
                log.warning("skipping an unreadable value for %r in %s-%d", tid, TOPIC,
                            partition)
                continue
            md = part.txns.get(tid) or TxnMetadata(tid, t.producer_id)
            md.apply(t)
            part.txns[tid] = md
        part.loading = False
        for md in part.txns.values():
            if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._spawn(self._send_markers(partition, epoch, md))
        log.info("loaded %d transactional id(s) from %s-%d (coordinator epoch %d)",
                 len(part.txns), TOPIC, partition, epoch)

    def unload_partition(self, partition: int) -> None:
        self.partitions.pop(partition, None)

    def _lookup(self, transactional_id: str):
        """(error, partition number, _Partition or None)."""
        n = self.partition_for(transactional_id)
        part = self.partitions.get(n)
        if part is None:
            return E.NOT_COORDINATOR, n, None
        if part.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, n, None
        return E.NONE, n, part

    def transactional_ids(self) -> Iterable[TxnMetadata]:
        for part in self.partitions.values():
            if not part.loading:
                yield from part.txns.values()

    # -- writing a transit ----------------------------------------------------------------

    async def _write(self, n: int, part: _Partition, md: TxnMetadata, t: TxnTransit) -> int:
        """Write t to the log and apply it; returns an error code (0 = applied)."""
        epoch = part.epoch
        if self.partitions.get(n) is not part:
            # state from a loading that is gone (the partition was unloaded, perhaps loaded
            # again since): it must not reach the log, where the current state is
            if md.pending is t:
                md.abandon_transition()
            return E.NOT_COORDINATOR
        value = None if t.state == S.DEAD else log_records.encode_value(t)
        try:
            await self.log.append(n, log_records.encode_key(md.transactional_id), value, epoch)
        except KafkaError as e:
            if md.pending is t:
                md.abandon_transition()
            return STORE_ERRORS.get(e.code, E.UNKNOWN_SERVER_ERROR)
        except Exception:
            log.exception("writing the state of %r failed", md.transactional_id)
            if md.pending is t:
                md.abandon_transition()
            return E.UNKNOWN_SERVER_ERROR
        now_part = self.partitions.get(n)
        if now_part is not part or part.epoch != epoch:
            return E.NOT_COORDINATOR       # lost the partition while writing
        md.complete_transition(t)
        if t.state == S.DEAD:
            part.txns.pop(md.transactional_id, None)
        return E.NONE

    # -- InitProducerId --------------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None = None) -> tuple[int, int, int]:
        """(error, producer_id, epoch). `expected` is the caller's (producer id, epoch) of
        InitProducerId v3+ (KIP-360), or None."""
        if not transactional_id:
            return E.INVALID_REQUEST, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return E.INVALID_TRANSACTION_TIMEOUT, -1, -1
        err, n, part = self._lookup(transactional_id)
        if err:
            return err, -1, -1
        md = part.txns.get(transactional_id)
        if md is None:
            md = TxnMetadata(transactional_id, self.next_producer_id(), timeout_ms=timeout_ms,
                             last_update_ms=self.clock())
            part.txns[transactional_id] = md
        if md.pending is not None:
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if expected is not None and not self._valid_expected(md, expected):
            return E.PRODUCER_FENCED, -1, -1
        now = self.clock()
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if md.state == S.ONGOING:
            # Fence the running instance and abort its transaction; the caller retries and
            # then gets the epoch bumped once more (never the fencing epoch itself).
            fence = md.prepare_fence_epoch(now)
            err = await self._end(md, fence.producer_id, fence.producer_epoch, commit=False,
                                  from_client=False)
            return (err or E.CONCURRENT_TRANSACTIONS), -1, -1
        if md.state not in IDLE:
            return E.UNKNOWN_SERVER_ERROR, -1, -1
        if is_epoch_exhausted(md.producer_epoch) and (
                expected is None or expected[1] == md.producer_epoch):
            t = md.prepare_producer_id_rotation(self.next_producer_id(), timeout_ms, now,
                                                record_last_epoch=expected is not None)
        else:
            t = md.prepare_increment_epoch(timeout_ms, None if expected is None
                                           else expected[1], now)
            if t is None:
                return E.PRODUCER_FENCED, -1, -1
        err = await self._write(n, part, md, t)
        if err:
            return err, -1, -1
        log.info("transactional id %r initialised: producer id %d, epoch %d", transactional_id,
                 t.producer_id, t.producer_epoch)
        return E.NONE, t.producer_id, t.producer_epoch

    @staticmethod
    def _valid_expected(md: TxnMetadata, expected: tuple[int, int]) -> bool:
        pid, epoch = expected
        return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                or (pid == md.last_producer_id and is_epoch_exhausted(epoch)))

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[tuple[str, int]]) -> int:
        if not transactional_id:
            return E.INVALID_REQUEST
        err, n, part = self._lookup(transactional_id)
        if err:
            return err
        md = part.txns.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != epoch:
            return E.PRODUCER_FENCED
        if md.pending is not None or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        wanted = set(partitions)
        if md.state == S.ONGOING and wanted <= md.partitions:
            return E.NONE
        if md.state not in IDLE and md.state != S.ONGOING:
            return E.INVALID_TXN_STATE
        return await self._write(n, part, md, md.prepare_add_partitions(wanted, self.clock()))

    def verify_partition(self, transactional_id: str, producer_id: int, epoch: int,
                         topic: str, partition: int) -> int:
        """KIP-890 part 1: may this producer write transactional data to this partition now?
        0 if the partition is in its ongoing transaction; otherwise the error the produce gets."""
        err, _, part = self._lookup(transactional_id)
        if err:
            return err
        md = part.txns.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if epoch < md.producer_epoch:
            return E.INVALID_PRODUCER_EPOCH
        if md.state != S.ONGOING or (topic, partition) not in md.partitions:
            return E.INVALID_TXN_STATE
        return E.NONE

    # -- EndTxn ----------------------------------------------------------------------------

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                      commit: bool) -> int:
        if not transactional_id:
            return E.INVALID_REQUEST
        err, _, part = self._lookup(transactional_id)
        if err:
            return err
        md = part.txns.get(transactional_id)
        if md is None:
            return E.INVALID_PRODUCER_ID_MAPPING
        return await self._end(md, producer_id, epoch, commit, from_client=True)

    async def _end(self, md: TxnMetadata, producer_id: int, epoch: int, commit: bool,
                   from_client: bool) -> int:
        fencing = md.pending_state == S.PREPARE_EPOCH_FENCE
        err, n, part, t = self._prepare_end(md, producer_id, epoch, commit, from_client)
        if t is None:
            if fencing and md.pending_state == S.PREPARE_EPOCH_FENCE:
                md.abandon_transition()          # the fence never happened
            return err
        err = await self._write(n, part, md, t)
        if err:
            if fencing:
                md.failed_epoch_fence = True     # bumped in memory, never handed out
            return err
        log.debug("%r: %s decided; writing markers to %d partition(s)", md.transactional_id,
                  "commit" if commit else "abort", len(md.partitions))
        self._spawn(self._send_markers(n, part.epoch, md))
        return E.NONE

    def _prepare_end(self, md: TxnMetadata, producer_id: int, epoch: int, commit: bool,
                     from_client: bool):
        """(error, partition number, _Partition, transit or None) for an EndTxn."""
        err, n, part = self._lookup(md.transactional_id)
        if err:
            return err, n, part, None
        if md.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING, n, part, None
        # Clients must name the current epoch exactly; the coordinator's own aborts carry
        # the fencing epoch, one above it.
        if (from_client and epoch != md.producer_epoch) or epoch < md.producer_epoch:
            return E.PRODUCER_FENCED, n, part, None
        if md.pending is not None and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS, n, part, None
        st = md.state
        if st == S.ONGOING:
            if md.pending is not None and commit:
                return E.INVALID_TXN_STATE, n, part, None    # a fence only ever aborts
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            return E.NONE, n, part, md.prepare_abort_or_commit(target, self.clock())
        if st == S.COMPLETE_COMMIT:
            err = E.NONE if commit else E.INVALID_TXN_STATE
        elif st == S.COMPLETE_ABORT:
            err = E.NONE if not commit else E.INVALID_TXN_STATE
        elif st == S.PREPARE_COMMIT:
            err = E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE
        elif st == S.PREPARE_ABORT:
            err = E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE
        else:                                     # Empty: nothing was added
            err = E.INVALID_TXN_STATE
        return err, n, part, None

    async def _send_markers(self, n: int, coordinator_epoch: int, md: TxnMetadata) -> None:
        """Write the decided outcome to every partition of the transaction, retrying what
        fails, then record the transaction complete."""
        commit = md.state == S.PREPARE_COMMIT
        todo = set(md.partitions)
        backoff = self.config.marker_retry_backoff_ms / 1000.0
        owner = self.partitions.get(n)      # the loading this work belongs to
        while todo:
            if self.partitions.get(n) is not owner or owner is None \
                    or owner.epoch != coordinator_epoch:
                return                      # not ours any more: the new owner finishes it
            try:
                results = await self.markers.write(md.producer_id, md.producer_epoch, commit,
                                                   coordinator_epoch, set(todo))
            except Exception:
                log.exception("writing markers for %r failed; retrying", md.transactional_id)
                results = {}
            for tp, code in results.items():
                if code == E.NONE or code in _MARKER_GIVE_UP:
                    if code:
                        log.warning("%r: %s-%d is gone; its marker is skipped",
                                    md.transactional_id, *tp)
                    todo.discard(tp)
            if todo:
                await asyncio.sleep(backoff)
        part = self.partitions.get(n)
        if part is None or part is not owner or part.epoch != coordinator_epoch:
            return
        if md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return
        err = await self._write(n, part, md, md.prepare_complete(self.clock()))
        if err:
            log.warning("%r: recording the completed transaction failed (%s); it is finished "
                        "again when the partition is next loaded", md.transactional_id,
                        ErrorCode(err).name)

    # -- housekeeping ---------------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Abort every Ongoing transaction older than its timeout (fencing its producer, as
        Kafka does). Returns how many aborts were started."""
        now = self.clock()
        started = 0
        for md in list(self.transactional_ids()):
            if (md.state == S.ONGOING and md.pending is None
                    and md.start_ms + md.timeout_ms < now):
                log.info("aborting the transaction of %r: open since %d, longer than its "
                         "timeout of %d ms", md.transactional_id, md.start_ms, md.timeout_ms)
                fence = md.prepare_fence_epoch(now)
                self._spawn(self._end(md, fence.producer_id, fence.producer_epoch,
                                      commit=False, from_client=False))
                started += 1
        return started

    async def expire_transactional_ids(self) -> int:
        """Forget ids idle longer than transactional.id.expiration.ms (a tombstone each)."""
        now = self.clock()
        expired = 0
        for md in list(self.transactional_ids()):
            if (md.state in IDLE and md.pending is None
                    and md.last_update_ms + self.config.id_expiration_ms <= now):
                err, n, part = self._lookup(md.transactional_id)
                if err:
                    continue
                if not await self._write(n, part, md, md.prepare_dead(now)):
                    expired += 1
        return expired

    def _spawn(self, coro: Awaitable) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait for background marker work (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()

    # -- describe / list ------------------------------------------------------------------

    def describe(self, transactional_id: str) -> dict:
        err, _, part = self._lookup(transactional_id) if transactional_id else \
            (E.INVALID_REQUEST, 0, None)
        out = {"error_code": err, "transactional_id": transactional_id,
               "transaction_state": "", "transaction_timeout_ms": 0,
               "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1,
               "topics": []}
        if err:
            return out
        md = part.txns.get(transactional_id)
        if md is None or md.state == S.DEAD:
            out["error_code"] = E.TRANSACTIONAL_ID_NOT_FOUND
            return out
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(md.partitions):
            by_topic.setdefault(topic, []).append(p)
        out.update(transaction_state=md.state.kafka_name, transaction_timeout_ms=md.timeout_ms,
                   transaction_start_time_ms=md.start_ms, producer_id=md.producer_id,
                   producer_epoch=md.producer_epoch,
                   topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()])
        return out

    def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
             min_duration_ms: int = -1) -> tuple[list[dict], list[str]]:
        """(transaction states, unknown state filters) as ListTransactions answers."""
        wanted, unknown = set(), []
        for name in states:
            s = TxnState.from_kafka_name(name)
            if s is None:
                unknown.append(name)
            else:
                wanted.add(s)
        pids = set(producer_ids)
        now = self.clock()
        out = []
        for md in self.transactional_ids():
            if md.state == S.DEAD or (wanted and md.state not in wanted):
                continue
            if pids and md.producer_id not in pids:
                continue
            if min_duration_ms >= 0 and (md.state != S.ONGOING
                                         or now - md.start_ms < min_duration_ms):
                continue
            out.append({"transactional_id": md.transactional_id, "producer_id": md.producer_id,
                        "transaction_state": md.state.kafka_name})
        return out, unknown


__all__ = ["TransactionCoordinator", "TxnConfig", "partition_for", "java_string_hash",
           "IllegalTransition", "TOPIC"]
