"""What the transaction coordinator knows of one transactional id, and the moves it may make.

A `TxnMetadata` is the coordinator's record of a transactional id: its producer id and epoch, its
timeout, the state of its current transaction and the partitions in it. Nothing changes it in
place: every request first *prepares* a `TxnTransit` (the state it wants to reach), the transit is
written to `__transaction_state`, and only once that write is durable is it applied with
`complete_transition`. While a transit is being written the metadata carries it as `pending`, and
other requests for the same id get CONCURRENT_TRANSACTIONS (retriable) instead of interleaving.

States and their numbers are Kafka's (the numbers are what TransactionLogValue stores):

    Empty -> Ongoing -> PrepareCommit -> CompleteCommit -> (Ongoing | Empty | Dead)
                     -> PrepareAbort  -> CompleteAbort  -> (Ongoing | Empty | Dead)
    Ongoing -> PrepareEpochFence -> PrepareAbort     (a new instance, or a timeout, fences
                                                      the current one and aborts its work)
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = (1 << 15) - 1          # producer epochs are int16


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka's DescribeTransactions / ListTransactions report."""
        return _NAMES[self]

    @classmethod
    def from_kafka_name(cls, name: str) -> "TxnState | None":
        for s, n in _NAMES.items():
            if n.lower() == name.lower():
                return s
        return None


_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit", TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit", TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

S = TxnState
# The states each state may be reached from (Kafka's validPreviousStates).
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
# States in which a transactional id has no transaction under way.
IDLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTransition(RuntimeError):
    """A move the state machine never makes; reaching it is a bug, not a client error."""


def is_epoch_exhausted(epoch: int) -> bool:
    # One epoch is kept in reserve so a fence can always bump once more.
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True)
class TxnTransit:
    """The state a transactional id is about to reach (what gets written to the log)."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset            # of (topic, partition)
    start_ms: int
    last_update_ms: int


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    pending: TxnTransit | None = None
    # A fence whose log write failed: its bumped epoch was never handed out, so the next fence
    # must not bump again (it would skip an epoch nobody saw).
    failed_epoch_fence: bool = False

    # -- helpers --------------------------------------------------------------------------

    @property
    def pending_state(self) -> TxnState | None:
        return None if self.pending is None else self.pending.state

    def _transit(self, state: TxnState, *, producer_id=None, last_producer_id=None,
                 epoch=None, last_epoch=None, timeout_ms=None, partitions=None,
                 start_ms=None, now_ms: int) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: a transition to "
                                    f"{self.pending.state.kafka_name} is still being written")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.kafka_name} -> "
                                    f"{state.kafka_name} is not a valid transition")
        t = TxnTransit(
            producer_id=self.producer_id if producer_id is None else producer_id,
            last_producer_id=self.last_producer_id if last_producer_id is None
            else last_producer_id,
            producer_epoch=self.producer_epoch if epoch is None else epoch,
            last_producer_epoch=self.last_producer_epoch if last_epoch is None else last_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=frozenset(self.partitions if partitions is None else partitions),
            start_ms=self.start_ms if start_ms is None else start_ms,
            last_update_ms=now_ms)
        self.pending = t
        return t

    # -- the moves (each returns the transit to write, and marks it pending) ---------------

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now_ms: int) -> TxnTransit | None:
        """InitProducerId on an idle id. None means the expected epoch is stale (fenced).

        Without an expected epoch (a fresh instance) the epoch goes up by one. With one (KIP-360
        recovery), it goes up only if it matches the current epoch; a match with the previous
        epoch is a retry of a bump whose answer was lost, and gets the current epoch again."""
        if is_epoch_exhausted(self.producer_epoch):
            raise IllegalTransition(f"{self.transactional_id}: epoch {self.producer_epoch} "
                                    "is exhausted; rotate the producer id instead")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            nxt, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            nxt, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            nxt, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._transit(S.EMPTY, epoch=nxt, last_epoch=last, timeout_ms=timeout_ms,
                             partitions=(), start_ms=-1, now_ms=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """The epoch ran out: continue under a new producer id at epoch 0."""
        return self._transit(
            S.EMPTY, producer_id=new_producer_id, last_producer_id=self.producer_id, epoch=0,
            last_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms, partitions=(), start_ms=-1, now_ms=now_ms)

    def prepare_fence_epoch(self, now_ms: int) -> TxnTransit:
        """Bump the epoch of an Ongoing transaction so its producer is fenced, before aborting
        it. This transit is never written: the PrepareAbort that follows carries its epoch."""
        if self.producer_epoch >= MAX_EPOCH:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence epoch "
                                    f"{self.producer_epoch}")
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._transit(S.PREPARE_EPOCH_FENCE, epoch=epoch, last_epoch=NO_PRODUCER_EPOCH,
                             now_ms=now_ms)

    def prepare_add_partitions(self, added, now_ms: int) -> TxnTransit:
        start = now_ms if self.state in IDLE else self.start_ms
        return self._transit(S.ONGOING, partitions=set(self.partitions) | set(added),
                             start_ms=start, now_ms=now_ms)

    def prepare_abort_or_commit(self, state: TxnState, now_ms: int) -> TxnTransit:
        if self.pending is not None and self.pending.state == S.PREPARE_EPOCH_FENCE:
            # The fence's epoch rides on the PrepareAbort that is written instead.
            fence, self.pending = self.pending, None
            self.producer_epoch = fence.producer_epoch
            self.last_producer_epoch = NO_PRODUCER_EPOCH
        return self._transit(state, now_ms=now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        return self._transit(state, partitions=(), now_ms=now_ms)

    def prepare_dead(self, now_ms: int) -> TxnTransit:
        return self._transit(S.DEAD, partitions=(), now_ms=now_ms)

    # -- applying -------------------------------------------------------------------------

    def complete_transition(self, t: TxnTransit) -> None:
        """The transit is durable: make it the current state."""
        if self.pending is not t:
            raise IllegalTransition(f"{self.transactional_id}: completing a transit that is "
                                    "not the pending one")
        self.pending = None
        self.failed_epoch_fence = False
        self.apply(t)

    def abandon_transition(self) -> None:
        """The write failed: nothing changed."""
        self.pending = None

    def apply(self, t: TxnTransit) -> None:
        self.producer_id = t.producer_id
        self.last_producer_id = t.last_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.timeout_ms = t.timeout_ms
        self.state = t.state
        self.partitions = set(t.partitions)
        self.start_ms = t.start_ms
        self.last_update_ms = t.last_update_ms
