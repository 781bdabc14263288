"""Idempotent delivery: producer id and epoch, per-partition sequence numbers, ordered retries.

The part of Kafka's TransactionManager an idempotent (non-transactional) producer needs. Sans-I/O:
the sender sends the InitProducerId request this object asks for and hands back the answer.

Ordering rules (the broker accepts a batch only if its base sequence follows the last one it
stored for the partition, and remembers the last 5 batches to drop duplicates):
- a partition has at most 5 batches in flight (the broker's duplicate window);
- a batch being retried goes out alone: it waits until nothing else of its partition is in
  flight, so retried batches reach the broker in sequence order;
- OUT_OF_ORDER_SEQUENCE / UNKNOWN_PRODUCER_ID on a batch that is not the first in flight is
  the echo of an earlier batch's failure: retry it. On the first in flight it means the broker
  lost our state: bump the epoch (new sequence space, starting at 0) and retry.
- a batch that expired while in flight leaves the sequence state unknown: bump the epoch.
"""
from __future__ import annotations

import logging

log = logging.getLogger("gregor.client.producer")

# The broker keeps the last 5 batches per producer and partition for duplicate detection.
MAX_IN_FLIGHT_PER_PARTITION = 5
_MAX_EPOCH = 32767

UNINITIALIZED, INITIALIZING, READY, BUMP_PENDING, FATAL = (
    "uninitialized", "initializing", "ready", "bump_pending", "fatal")


class IdempotenceManager:
    transactional = False

    def __init__(self):
        self.producer_id = -1
        self.producer_epoch = -1
        self.state = UNINITIALIZED
        self.fatal_error: Exception | None = None
        self._next_seq: dict[tuple[str, int], int] = {}
        self._in_flight: dict[tuple[str, int], list] = {}
        # Batches with a sequence that are not settled yet (in flight or waiting to be
        # retried), by sequence: the first of them is the one the broker expects next.
        self._unacked: dict[tuple[str, int], list] = {}
        self.bumps = 0

    # -- producer id ---------------------------------------------------------------------
    @property
    def needs_producer_id(self) -> bool:
        return self.state in (UNINITIALIZED, BUMP_PENDING)

    def init_request(self, version: int, transaction_timeout_ms: int) -> dict:
        """InitProducerId body; a bump passes our id/epoch (v3+) so the broker raises the
        epoch instead of handing out a new id."""
        bump = self.state == BUMP_PENDING and version >= 3 and self.producer_id >= 0 \
            and self.producer_epoch < _MAX_EPOCH
        self.state_before_init = self.state
        self.state = INITIALIZING
        return {"transactional_id": None, "transaction_timeout_ms": transaction_timeout_ms,
                "producer_id": self.producer_id if bump else -1,
                "producer_epoch": self.producer_epoch if bump else -1}

    def on_init_response(self, producer_id: int, producer_epoch: int) -> None:
        old = (self.producer_id, self.producer_epoch)
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._next_seq.clear()
        self._unacked.clear()
        self.state = READY
        if old[0] >= 0:
            self.bumps += 1
            log.info("producer id/epoch %s/%s -> %s/%s; sequences restart at 0", old[0],
                     old[1], producer_id, producer_epoch)

    def on_init_failed(self, error: Exception, fatal: bool) -> None:
        if fatal:
            self.state = FATAL
            self.fatal_error = error
        else:
            self.state = getattr(self, "state_before_init", UNINITIALIZED)

    def request_bump(self, why: str) -> None:
        if self.state in (READY, INITIALIZING):
            log.info("bumping the producer epoch: %s", why)
            self.state = BUMP_PENDING

    @property
    def has_in_flight(self) -> bool:
        return any(self._in_flight.values())

    # -- drain-time rules ----------------------------------------------------------------
    def can_send(self, batch) -> bool:
        if self.state != READY:
            return False
        inflight = self._in_flight.get((batch.topic, batch.partition))
        if not inflight:
            return True
        if batch.in_retry:
            return False  # retries go out alone, in order
        return len(inflight) < MAX_IN_FLIGHT_PER_PARTITION

    def assign_sequence(self, batch) -> None:
        """Give a drained batch its sequence (kept across retries within one epoch)."""
        tp = (batch.topic, batch.partition)
        if batch.producer_id != self.producer_id or batch.producer_epoch != self.producer_epoch \
                or batch.base_sequence < 0:
            seq = self._next_seq.get(tp, 0)
            batch.base_sequence = seq
            batch.producer_id = self.producer_id
            batch.producer_epoch = self.producer_epoch
            self._next_seq[tp] = (seq + batch.record_count) & 0x7FFFFFFF
            if batch.data is not None:
                batch.stale = True  # rewrite the fields in the encoded bytes
        lst = self._in_flight.setdefault(tp, [])
        lst.append(batch)
        lst.sort(key=_seq_key)
        unacked = self._unacked.setdefault(tp, [])
        if batch not in unacked:
            unacked.append(batch)
            unacked.sort(key=_seq_key)

    def is_first_in_flight(self, batch) -> bool:
        """True when no unsettled batch of the partition has a lower sequence: an error on
        this batch is about the broker's state, not an echo of an earlier failure."""
        lst = self._unacked.get((batch.topic, batch.partition))
        return not lst or lst[0] is batch

    def on_settled(self, batch) -> None:
        """The batch is acknowledged or failed for good."""
        lst = self._unacked.get((batch.topic, batch.partition))
        if lst and batch in lst:
            lst.remove(batch)

    def remove_in_flight(self, batch) -> None:
        lst = self._in_flight.get((batch.topic, batch.partition))
        if lst and batch in lst:
            lst.remove(batch)

    def sequence_reset_needed(self, batch) -> None:
        """A split batch: its successors' sequences no longer line up; start a new epoch."""
        self.request_bump(f"batch for {batch.topic}-{batch.partition} was split")


def _seq_key(batch) -> int:
    return batch.base_sequence
