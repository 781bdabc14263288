"""ProducerBatch: records for one partition plus the futures waiting on them.

A batch keeps its records as parallel lists (keys, values, timestamps, headers) while it fills;
`close()` encodes them once, in one vectorised pass, with the records layer's bulk builder
(`build_batch_bulk`, the same encoder BatchBuilder uses). Appending a record is therefore three
list appends and a size check, which keeps send() cheap.

One `ProduceResult` is shared by all records of a batch (the broker answers per batch); each
send() gets a small `FutureRecordMetadata` holding the result and its index in the batch.
"""
from __future__ import annotations

import logging
import struct
import threading
from array import array
from typing import NamedTuple

import numpy as np

from ...protocol.records.builder import build_batch_bulk
from ...protocol.records.header import ATTRIBUTES_OFFSET, CRC_OFFSET, compute_crc
from ..errors import KafkaTimeoutError
from .fastpath import FutureCore

log = logging.getLogger("gregor.client.producer")

# Where the idempotence fields sit in a v2 batch header: producer id (int64), epoch (int16),
# base sequence (int32), one after the other.
PRODUCER_ID_OFFSET = 43
_PRODUCER_FIELDS = struct.Struct(">qhi")
_ATTRS = struct.Struct(">h")
TRANSACTIONAL_BIT = 0x10
_CRC = struct.Struct(">I")

# Per-record bytes beyond key and value in a v2 batch (attributes, deltas, varint lengths,
# header count) for records up to 8 KiB: the same estimate the records layer uses.
RECORD_OVERHEAD = 12
BATCH_OVERHEAD = 61


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


class ProduceResult:
    """The outcome of one batch: base offset / log append time, or an error. When the batch
    was split, `split` lists (first index, child result) and the records live on there."""

    __slots__ = ("topic", "partition", "base_offset", "log_append_time", "error", "event",
                 "done", "split", "timestamps", "done_callbacks")

    def __init__(self, topic: str, partition: int, timestamps: list):
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error = None
        self.event = None  # made only when someone waits: most results are never waited on
        self.done = False
        self.split = None
        self.timestamps = timestamps
        self.done_callbacks = None  # [(index, fn, future)] from add_done_callback

    def wait(self, timeout: float | None = None) -> bool:
        """Block until settled (or timeout); True when settled."""
        if self.done:
            return True
        with _CALLBACK_LOCK:
            if self.done:
                return True
            ev = self.event
            if ev is None:
                ev = self.event = threading.Event()
        return ev.wait(timeout)

    def wake(self) -> None:
        """Release waiters; call after setting done under _CALLBACK_LOCK."""
        ev = self.event
        if ev is not None:
            ev.set()

    def resolve(self, index: int):
        """(result, index) holding record `index` after any splits."""
        r = self
        while r.split is not None:
            if type(r.split) is tuple:  # a staged block, routed record by record
                parts, pos, children = r.split  # numpy arrays, see staging.py
                r, index = children[int(parts[index])], int(pos[index])
                continue
            start, child = r.split[0]
            for s, c in r.split:
                if s > index:
                    break
                start, child = s, c
            r, index = child, index - start
        return r, index


class FutureRecordMetadata(FutureCore):
    """A concurrent.futures.Future-like handle on one record's delivery. Made by
    `future_for(result, index)` (or inline in send()'s fast path)."""

    # No __init__: send() makes one per record, and a bare FutureRecordMetadata() with its
    # two slots set afterwards costs half as much as a call through a Python __init__
    # (~50 ns against ~100 ns a record, see benchmarks/bench_producer_send.py).
    __slots__ = ()

    def _wait(self, timeout):
        r, i = self._result, self._index
        while True:
            if not r.done and not r.wait(timeout):
                raise KafkaTimeoutError(f"record not acknowledged within {timeout} s")
            if r.split is None:
                return r, i
            r, i = r.resolve(i)

    def result(self, timeout: float | None = None) -> RecordMetadata:
        r, i = self._wait(timeout)
        if r.error is not None:
            raise r.error
        return _metadata(r, i)

    get = result

    def exception(self, timeout: float | None = None):
        return self._wait(timeout)[0].error

    def _settled(self):
        r, i = self._result.resolve(self._index)
        return r if r.done else None

    def done(self) -> bool:
        return self._settled() is not None

    def succeeded(self) -> bool:
        r = self._settled()
        return r is not None and r.error is None

    def failed(self) -> bool:
        r = self._settled()
        return r is not None and r.error is not None

    def cancel(self) -> bool:
        return False  # a record handed to the producer cannot be taken back

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return not self.done()

    def add_done_callback(self, fn) -> None:
        """fn(future) once the record is acknowledged or failed (at once if already done)."""
        r, i = self._result.resolve(self._index)
        with _CALLBACK_LOCK:
            if not r.done:
                if r.done_callbacks is None:
                    r.done_callbacks = []
                r.done_callbacks.append((i, fn, self))
                return
        _safe_call(fn, self)

    def __repr__(self):
        r = self._settled()
        state = "pending" if r is None else ("failed" if r.error else "done")
        return f"<FutureRecordMetadata {self._result.topic}-{self._result.partition} {state}>"


def future_for(result: ProduceResult, index: int) -> FutureRecordMetadata:
    """The future of record `index` of the batch whose outcome is `result`."""
    f = FutureRecordMetadata()
    f._result = result
    f._index = index
    return f


# Guards done-callback registration against the sender settling the batch at the same time.
_CALLBACK_LOCK = threading.Lock()


def _metadata(r: ProduceResult, i: int) -> RecordMetadata:
    offset = r.base_offset + i if r.base_offset >= 0 else -1
    # int(): send() keeps timestamps as float milliseconds (see new_timestamps).
    ts = r.log_append_time if r.log_append_time >= 0 else int(r.timestamps[i])
    return RecordMetadata(r.topic, r.partition, offset, ts)


# Timestamps (ms) must stay below this: a float64 holds every integer up to 2**53 exactly
# (2**53 ms is the year 287,396).
TIMESTAMP_LIMIT = 2 ** 53


def new_timestamps(data: bytes = b"") -> array:
    """A batch's timestamps: float milliseconds in an array('d'). send() appends clock
    readings (time.time() * 1000.0) and callers' int timestamps (< TIMESTAMP_LIMIT, exact)
    there. Compared with a list of ints this saves the int division and a 32-byte object per
    record in send(), and the sender reads the raw doubles at encode time without touching
    one Python object per record (benchmarks/bench_producer_send.py)."""
    return array("d", data)


def ms_timestamps(ts) -> np.ndarray:
    """Int millisecond timestamps (int64) for the encoder from a batch's array('d'):
    truncation, i.e. the floor for clock readings, as RecordMetadata reports."""
    return np.frombuffer(ts, dtype=np.float64).astype(np.int64)


def _safe_call(fn, *args):
    try:
        fn(*args)
    except Exception:
        log.exception("producer callback %r raised; the producer carries on", fn)


class ProducerBatch:
    __slots__ = ("topic", "partition", "keys", "values", "timestamps", "headers", "size",
                 "max_bytes", "compression", "result", "callbacks", "created", "attempts",
                 "retry_at", "reserved", "data", "base_sequence", "producer_id",
                 "producer_epoch", "in_retry", "drained_at", "final", "full", "bytes_in",
                 "interceptors", "bulk", "no_merge", "count", "stale")

    def __init__(self, topic, partition, now, reserved, max_bytes, compression):
        self.topic = topic
        self.partition = partition
        self.keys = []
        self.values = []
        self.timestamps = new_timestamps()
        self.headers = None           # one entry per record once any record has headers
        self.size = BATCH_OVERHEAD
        self.max_bytes = max_bytes
        self.compression = compression
        self.result = ProduceResult(topic, partition, self.timestamps)
        self.callbacks = None         # [(index, callback)] in append order
        self.created = now
        self.attempts = 0
        self.retry_at = 0.0
        self.reserved = reserved      # bytes taken from the BufferPool
        self.data = None              # encoded bytes, made by close()
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.in_retry = False
        self.drained_at = 0.0
        self.final = False            # settled (acknowledged, failed or expired)
        self.full = False
        self.bytes_in = 0
        self.interceptors = None
        self.bulk = False             # made by send_batch
        self.no_merge = False         # a split product: merging it back would undo the split
        self.count = -1               # record count once the record lists are released
        self.stale = False            # data's producer id/epoch/sequence need rewriting

    @property
    def record_count(self) -> int:
        return len(self.keys) if self.keys is not None else self.count

    def try_append(self, timestamp, key, value, headers, callback) -> FutureRecordMetadata | None:
        """Append unless the batch is full (the first record always goes in)."""
        size = self.size + RECORD_OVERHEAD
        if key is not None:
            size += len(key)
        if value is not None:
            size += len(value)
        if headers:
            size += sum(len(k) + (len(v) if v is not None else 0) + 6 for k, v in headers)
        i = len(self.keys)
        if size > self.max_bytes and i:
            return None
        self.size = size
        self.keys.append(key)
        self.values.append(value)
        self.timestamps.append(timestamp)
        if headers or self.headers is not None:
            if self.headers is None:
                self.headers = [None] * i
            self.headers.append(headers or None)
        if callback is not None:
            if self.callbacks is None:
                self.callbacks = []
            self.callbacks.append((i, callback))
        return future_for(self.result, i)

    def absorb(self, other: "ProducerBatch") -> None:
        """Append other's records (queued right behind ours, same partition) to this batch;
        other's futures and callbacks follow them here."""
        shift = len(self.keys)
        if other.headers is not None or self.headers is not None:
            if self.headers is None:
                self.headers = [None] * shift
            self.headers.extend(other.headers or [None] * len(other.keys))
        self.keys.extend(other.keys)
        self.values.extend(other.values)
        self.timestamps.extend(other.timestamps)
        self.size += other.size - BATCH_OVERHEAD
        self.reserved += other.reserved
        other.reserved = 0
        if other.callbacks:
            if self.callbacks is None:
                self.callbacks = []
            self.callbacks.extend((i + shift, cb) for i, cb in other.callbacks)
        r = other.result
        with _CALLBACK_LOCK:
            # Index i of other is index i + shift here: a "split" starting at -shift.
            r.split = [(-shift, self.result)]
            if r.done_callbacks:
                mine = self.result
                if mine.done_callbacks is None:
                    mine.done_callbacks = []
                mine.done_callbacks.extend((i + shift, fn, fut)
                                           for i, fn, fut in r.done_callbacks)
            r.done_callbacks = None
            r.done = True
        other.final = True
        r.wake()

    def close(self, transactional: bool = False) -> bytes:
        """Encode the batch with the current producer id / epoch / base sequence."""
        self.bytes_in = self.size
        ts = self.timestamps
        if type(ts) is array:  # else a list, an int or an int64 array (send_batch)
            ts = ms_timestamps(ts)
        self.data = build_batch_bulk(self.keys, self.values, ts, self.compression,
                                     headers=self.headers, producer_id=self.producer_id,
                                     producer_epoch=self.producer_epoch,
                                     base_sequence=self.base_sequence,
                                     transactional=transactional, mutable=True)
        return self.data

    def release_records(self) -> None:
        """Once encoded, the bytes are all a retry needs: drop the per-record objects so a
        batch in flight costs its wire size, not that plus Python overhead."""
        self.count = len(self.keys)
        self.keys = self.values = self.headers = None

    def rewrite_producer_fields(self, transactional: bool = False) -> None:
        """Put the current producer id / epoch / base sequence into the encoded batch (after
        an epoch bump) without re-encoding its records. In place: close() made data a
        bytearray, and a batch is rewritten only between sends, never while a request holds
        its bytes."""
        buf = self.data if type(self.data) is bytearray else bytearray(self.data)
        _PRODUCER_FIELDS.pack_into(buf, PRODUCER_ID_OFFSET, self.producer_id,
                                   self.producer_epoch, self.base_sequence)
        if transactional:
            attrs = _ATTRS.unpack_from(buf, ATTRIBUTES_OFFSET)[0]
            _ATTRS.pack_into(buf, ATTRIBUTES_OFFSET, attrs | TRANSACTIONAL_BIT)
        _CRC.pack_into(buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
        self.data = buf
        self.stale = False

    def records_for_split(self):
        """(timestamps, keys, values, headers) of the batch, from the lists or the bytes."""
        if self.keys is not None:
            return self.result.timestamps, self.keys, self.values, self.headers
        from ...protocol.records.batch import decode_batches
        recs = decode_batches(self.data)[0].records
        hdrs = [r.headers or None for r in recs]
        return ([r.timestamp for r in recs], [r.key for r in recs], [r.value for r in recs],
                hdrs if any(hdrs) else None)

    def estimated_size(self) -> int:
        return len(self.data) if self.data is not None else self.size

    def complete(self, base_offset: int, log_append_time: int, error) -> bool:
        """Settle every record, run callbacks in append order. False if already settled
        (e.g. expired while its request was in flight)."""
        if self.final:
            return False
        self.final = True
        r = self.result
        r.base_offset = base_offset
        r.log_append_time = log_append_time
        r.error = error
        with _CALLBACK_LOCK:
            r.done = True
            done_cbs, r.done_callbacks = r.done_callbacks, None
        r.wake()
        if self.callbacks:
            for i, cb in self.callbacks:
                if error is None:
                    _safe_call(cb, _metadata(r, i), None)
                else:
                    _safe_call(cb, None, error)
        if done_cbs:
            for _, fn, fut in sorted(done_cbs, key=lambda t: t[0]):
                _safe_call(fn, fut)
        if self.interceptors:
            for i in range(self.record_count):
                md = _metadata(r, i) if error is None else None
                for ic in self.interceptors:
                    fn = getattr(ic, "on_acknowledgement", None)
                    if fn is not None:
                        _safe_call(fn, md, error)
        return True
