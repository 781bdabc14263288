"""sarama-shaped facades over the one producer engine.

    sp = SyncProducer({"bootstrap.servers": "127.0.0.1:9092"})
    partition, offset = sp.send_message(ProducerMessage("topic", value=b"v"))

    ap = AsyncProducer({"bootstrap.servers": "..."}, return_successes=True)
    ap.input().put(ProducerMessage("topic", value=b"v"))
    msg = ap.successes().get()          # the message, with partition and offset filled in
    err = ap.errors().get_nowait()      # ProducerError(msg, err) for failures

Like sarama, acks default to WaitForLocal (1) and the partitioner to sarama's hash partitioner;
any Producer config key may be given to override them.

With a `transactional.id` (sarama's Producer.Transaction.ID) both producers are transactional
as sarama's are: the id is initialised when the producer is made, and begin_txn(),
add_message_to_txn() / add_offsets_to_txn(), commit_txn() and abort_txn() drive it.
"""
from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

from .facade import EngineFacade, ErrorList
from .producer import Producer

# sarama's defaults where they differ from Java's: RequiredAcks = WaitForLocal, hash partitioner.
_SARAMA_DEFAULTS = {"acks": 1, "partitioner": "sarama.hash"}


@dataclass
class ProducerMessage:
    topic: str
    value: Any = None
    key: Any = None
    headers: list | None = None
    partition: int | None = None      # set it with partitioner "sarama.manual"
    timestamp: int | None = None      # ms since the epoch; None means now
    metadata: Any = None              # yours: carried through to successes()/errors()
    offset: int = field(default=-1)


@dataclass
class ProducerError(Exception):
    msg: ProducerMessage
    err: BaseException

    def __str__(self):
        return f"failed to produce to {self.msg.topic}: {self.err}"


def _engine(config, kwargs) -> Producer:
    conf = dict(_SARAMA_DEFAULTS)
    given = {k.replace("_", "."): v for k, v in {**(config or {}), **kwargs}.items()}
    if "partitioner.class" in given:
        conf.pop("partitioner")
    if "acks" not in given and (given.get("enable.idempotence") in (True, "true")
                                or given.get("transactional.id") is not None):
        conf["acks"] = -1
    conf.update(config or {})
    return Producer(conf, **kwargs)


def _send(engine: Producer, msg: ProducerMessage, callback=None):
    return engine.send(msg.topic, msg.value, msg.key, msg.headers, msg.partition,
                       msg.timestamp, callback)


@dataclass
class PartitionOffsetMetadata:
    """sarama's PartitionOffsetMetadata: the next offset to consume, for add_offsets_to_txn."""
    partition: int
    offset: int
    metadata: str | None = None


class _Transactional:
    """sarama's transactional calls, over the engine's transaction manager."""
    _engine: Producer

    def _init_txn(self) -> None:
        if self.is_transactional():
            self._engine.init_transactions()   # sarama initialises in NewSyncProducer

    def is_transactional(self) -> bool:
        txn = self._engine._txn
        return txn is not None and txn.transactional

    def txn_status(self) -> str:
        """The transaction state: uninitialized, ready, in_transaction, committing, aborting,
        abortable_error or fatal_error (sarama's ProducerTxnStatusFlag, as a name)."""
        return self._engine._txn.txn_state if self.is_transactional() else "uninitialized"

    def begin_txn(self) -> None:
        self._engine.begin_transaction()

    def commit_txn(self, timeout: float | None = None) -> None:
        self._engine.commit_transaction(timeout)

    def abort_txn(self, timeout: float | None = None) -> None:
        self._engine.abort_transaction(timeout)

    def add_offsets_to_txn(self, offsets: dict, group_id: str,
                           timeout: float | None = None) -> None:
        """offsets: {topic: [PartitionOffsetMetadata or (partition, offset[, metadata])]}."""
        flat = {}
        for topic, parts in offsets.items():
            for po in parts:
                if not isinstance(po, PartitionOffsetMetadata):
                    po = PartitionOffsetMetadata(*po)
                flat[(topic, po.partition)] = (po.offset, po.metadata)
        self._engine.send_offsets_to_transaction(flat, group_id, timeout)

    def add_message_to_txn(self, msg, group_id: str, metadata: str | None = None,
                           timeout: float | None = None) -> None:
        """Commit a consumed message with the transaction: its offset + 1 is the group's
        next position (msg: anything with topic, partition and offset)."""
        self._engine.send_offsets_to_transaction(
            {(msg.topic, msg.partition): (msg.offset + 1, metadata)}, group_id, timeout)


class SyncProducer(_Transactional, EngineFacade):
    """Blocks until each message is acknowledged (sarama's SyncProducer)."""

    def __init__(self, config: dict | None = None, **kwargs):
        self._engine = _engine(config, kwargs)
        self._init_txn()

    def send_message(self, msg: ProducerMessage, timeout: float | None = None
                     ) -> tuple[int, int]:
        md = _send(self._engine, msg).result(timeout)
        msg.partition, msg.offset, msg.timestamp = md.partition, md.offset, md.timestamp
        return md.partition, md.offset

    def send_messages(self, msgs: list[ProducerMessage], timeout: float | None = None) -> None:
        """Send all, wait for all; raises ProducerErrors (a list of ProducerError) if any
        failed. Successful messages get partition/offset filled in."""
        futs = [_send(self._engine, m) for m in msgs]
        errors = ProducerErrors()
        for m, f in zip(msgs, futs):
            try:
                md = f.result(timeout)
                m.partition, m.offset, m.timestamp = md.partition, md.offset, md.timestamp
            except Exception as e:
                errors.append(ProducerError(m, e))
        if errors:
            raise errors


class ProducerErrors(ErrorList):
    """Several ProducerError at once (sarama's ProducerErrors); iterate it like a list."""

    def append(self, e):
        self.errors.append(e)

    def __bool__(self):
        return bool(self.errors)

    def __str__(self):
        return f"{len(self)} messages failed to produce: " + "; ".join(
            map(str, self.errors[:3]))


class _Input:
    """input(): put() hands the message to the engine at once (no extra thread or queue)."""

    def __init__(self, owner: "AsyncProducer"):
        self._owner = owner

    def put(self, msg: ProducerMessage, block: bool = True, timeout: float | None = None):
        self._owner._dispatch(msg)

    put_nowait = put
    send = put


class AsyncProducer(_Transactional, EngineFacade):
    """sarama's AsyncProducer: messages go in through input(); acknowledged messages come out
    of successes() (when return_successes), failures out of errors() (when return_errors).
    Unlike Go channels these queues are unbounded: read them, or turn them off."""

    def __init__(self, config: dict | None = None, *, return_successes: bool = False,
                 return_errors: bool = True, **kwargs):
        self._engine = _engine(config, kwargs)
        self._return_successes = return_successes
        self._return_errors = return_errors
        self._successes: queue.Queue = queue.Queue()
        self._errors: queue.Queue = queue.Queue()
        self._input = _Input(self)
        self._init_txn()

    def input(self) -> _Input:
        return self._input

    def successes(self) -> queue.Queue:
        return self._successes

    def errors(self) -> queue.Queue:
        return self._errors

    def _dispatch(self, msg: ProducerMessage) -> None:
        def done(md, err):
            if err is None:
                msg.partition, msg.offset, msg.timestamp = md.partition, md.offset, md.timestamp
                if self._return_successes:
                    self._successes.put(msg)
            elif self._return_errors:
                self._errors.put(ProducerError(msg, err))
        try:
            _send(self._engine, msg, done)
        except Exception as e:  # refused before queueing (too large, unknown topic, closed)
            if self._return_errors:
                self._errors.put(ProducerError(msg, e))
            else:
                raise

    def flush(self, timeout: float | None = None) -> None:
        self._engine.flush(timeout)

    def async_close(self) -> None:
        """Stop taking messages; what is queued is still sent (returns at once)."""
        import threading
        threading.Thread(target=self._engine.close, daemon=True).start()

    def close(self, timeout: float | None = None) -> list[ProducerError]:
        """Send what is queued, stop, and return the errors not yet read from errors()."""
        self._engine.close(timeout)
        out = []
        while True:
            try:
                out.append(self._errors.get_nowait())
            except queue.Empty:
                return out
