"""Idempotent-producer state of one partition: per producer id, its epoch and the sequence
numbers and offsets of its last 5 batches.

The rules follow current Kafka:
- a batch whose (epoch, first seq, last seq) matches one of the producer's last 5 batches is a
  retry: the log returns the original offsets and appends nothing;
- an epoch older than the producer's current one fails with INVALID_PRODUCER_EPOCH;
- a new epoch must start at sequence 0, otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
- within an epoch each batch must start right after the previous one's last sequence
  (wrapping after 2**31 - 1), otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer id the log has no state for may start at any sequence (its state may have been
  removed with the records that carried it). With reject_unknown_sequence (Kafka before 2.5)
  a non-zero sequence fails with UNKNOWN_PRODUCER_ID instead.
Only appends from clients are validated; replicated appends and recovery replay just update.
Why 5: the producer keeps at most 5 requests in flight per partition, so a retry can only be
one of the last 5 batches.

Snapshots: `<offset>.snapshot` (20-digit offset, like segments) holds the state after every
batch below <offset>. Format (big-endian): b"GPS1", crc32c uint32 of everything after it,
count int32, then per producer: producer_id int64, epoch int16, last_timestamp int64,
txn_first_offset int64 (-1 none), batch count int8, and per batch first_seq int32,
last_seq int32, first_offset int64, last_offset int64, timestamp int64. A file that fails its
CRC is ignored (the log replays from an older snapshot or from its start instead).
"""
from __future__ import annotations

import logging
import os
import struct
from collections import deque
from dataclasses import dataclass, field

import crc32c

from ..protocol.errors import (InvalidProducerEpochError, InvalidTxnStateError,
                               OutOfOrderSequenceNumberError, UnknownProducerIdError)
from ..protocol.records.header import BatchHeader

log = logging.getLogger("gregor.log")

BATCHES_TO_RETAIN = 5
NO_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1
SNAPSHOT_SUFFIX = ".snapshot"
_MAGIC = b"GPS1"
_HEAD = struct.Struct(">4sIi")
_ENTRY = struct.Struct(">qhqqb")
_BATCH = struct.Struct(">iiqqq")


@dataclass(slots=True, frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True, frozen=True)
class CompletedTxn:
    """An aborted transaction as its ABORT marker closed it: what its `.txnindex` entry holds.
    last_stable_offset is the first offset of the earliest transaction of another producer
    still open at the marker, else the marker's offset + 1."""
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    txn_first_offset: int = -1       # first offset of the ongoing transaction, -1 if none

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.epoch,
                                  deque(self.batches, maxlen=BATCHES_TO_RETAIN),
                                  self.last_timestamp, self.txn_first_offset)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def _set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


class ProducerStateManager:
    """Producer id -> ProducerStateEntry, with validation, staging and snapshots.

    Read it like a mapping: `state[pid].epoch`, `state[pid].last_seq`, `pid in state`."""

    def __init__(self, directory: str, *, reject_unknown_sequence: bool = False):
        self.dir = directory
        self.reject_unknown_sequence = reject_unknown_sequence
        self.producers: dict[int, ProducerStateEntry] = {}

    # -- mapping-style read access -------------------------------------------------------

    def __getitem__(self, producer_id: int) -> ProducerStateEntry:
        return self.producers[producer_id]

    def __contains__(self, producer_id: object) -> bool:
        return producer_id in self.producers

    def __len__(self) -> int:
        return len(self.producers)

    def get(self, producer_id: int, default=None):
        return self.producers.get(producer_id, default)

    def items(self):
        return self.producers.items()

    def first_unstable_offset(self) -> int | None:
        """Smallest first offset of an ongoing transaction (for the last stable offset)."""
        firsts = [e.txn_first_offset for e in self.producers.values() if e.txn_first_offset >= 0]
        return min(firsts) if firsts else None

    # -- appends -------------------------------------------------------------------------

    def find_duplicate(self, h: BatchHeader) -> BatchMetadata | None:
        """The original metadata if h repeats one of its producer's last 5 batches."""
        if h.producer_id < 0 or h.base_sequence < 0 or h.is_control:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None
        return entry.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)

    def stage(self, headers: list[BatchHeader], *, validate: bool,
              check_sequence: bool = True, aborts=(),
              aborted: list[CompletedTxn] | None = None) -> dict[int, ProducerStateEntry]:
        """Check and apply headers (offsets already assigned) to copies of the entries; the
        live state changes only in commit(), so a rejected append leaves no trace.

        aborts holds the offsets of the ABORT markers among headers; each one that closes an
        open transaction is added to `aborted`, computed from the state as it is at that
        marker, batch by batch. A follower appends a whole fetched chunk at once, which may
        hold a transaction's first batch, its marker and other producers' batches: the state
        before the chunk would give the wrong first offset (or none)."""
        staged: dict[int, ProducerStateEntry] = {}
        for h in headers:
            pid = h.producer_id
            if pid < 0:
                continue
            updated = staged.get(pid)
            if updated is None:
                current = self.producers.get(pid)
                updated = current.copy() if current else ProducerStateEntry(pid)
                staged[pid] = updated
            if validate:
                self._validate(h, updated, check_sequence)
            if (h.is_control and updated.txn_first_offset >= 0 and aborted is not None
                    and h.base_offset in aborts):
                aborted.append(self._completed(updated, h.base_offset, staged))
            self._apply(h, updated)
        return staged

    def _completed(self, entry: ProducerStateEntry, marker_offset: int,
                   staged: dict[int, ProducerStateEntry]) -> CompletedTxn:
        pid = entry.producer_id
        others = [e.txn_first_offset for p, e in staged.items()
                  if p != pid and e.txn_first_offset >= 0]
        others += [e.txn_first_offset for p, e in self.producers.items()
                   if p != pid and p not in staged and e.txn_first_offset >= 0]
        return CompletedTxn(pid, entry.txn_first_offset, marker_offset,
                            min(others) if others else marker_offset + 1)

    def _validate(self, h: BatchHeader, updated: ProducerStateEntry,
                  check_sequence: bool = True) -> None:
        pid, epoch = h.producer_id, h.producer_epoch
        if epoch < updated.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} sent epoch {epoch} at offset {h.base_offset}, older than its "
                f"current epoch {updated.epoch}; a newer producer instance has taken over")
        if h.is_control or not check_sequence:
            return
        first_seq = h.base_sequence
        current = self.producers.get(pid)
        known = current is not None and current.epoch != NO_EPOCH
        if epoch != updated.epoch:
            if first_seq != 0:
                if updated.epoch != NO_EPOCH:
                    raise OutOfOrderSequenceNumberError(
                        f"producer {pid} started epoch {epoch} at sequence {first_seq}; a new "
                        f"epoch must start at sequence 0 (current epoch {updated.epoch})")
                if self.reject_unknown_sequence:
                    raise UnknownProducerIdError(
                        f"no state for producer {pid} and its first batch has sequence "
                        f"{first_seq}, not 0; reset the producer id and retry")
        elif known and not _in_sequence(updated.last_seq, first_seq):
            raise OutOfOrderSequenceNumberError(
                f"producer {pid} epoch {epoch} sent sequence {first_seq} at offset "
                f"{h.base_offset}; expected {(updated.last_seq + 1) & INT32_MAX}")
        if updated.txn_first_offset >= 0 and not h.is_transactional:
            raise InvalidTxnStateError(
                f"producer {pid} sent a non-transactional batch while its transaction "
                f"starting at offset {updated.txn_first_offset} is open")

    @staticmethod
    def _apply(h: BatchHeader, entry: ProducerStateEntry) -> None:
        entry._set_epoch(h.producer_epoch)
        entry.last_timestamp = h.max_timestamp
        if h.is_control:
            entry.txn_first_offset = -1     # a commit or abort marker ends the transaction
            return
        entry.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.base_offset,
                                           h.base_offset + h.last_offset_delta,
                                           h.max_timestamp))
        if h.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = h.base_offset

    def commit(self, staged: dict[int, ProducerStateEntry]) -> None:
        self.producers.update(staged)

    def replay(self, h: BatchHeader, *, abort: bool = False) -> CompletedTxn | None:
        """Apply a batch already in the log (recovery), without validation. For an ABORT
        marker (abort=True) closing an open transaction, returns that transaction."""
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(h.producer_id)
        done = None
        if abort and h.is_control and entry.txn_first_offset >= 0:
            done = self._completed(entry, h.base_offset, {})
        self._apply(h, entry)
        return done

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is older than expiration_ms and that have no open
        transaction (Kafka's producer.id.expiration.ms); returns their ids."""
        expired = [pid for pid, e in self.producers.items()
                   if e.txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return expired

    def clear(self) -> None:
        self.producers.clear()

    # -- snapshots -----------------------------------------------------------------------

    def encode(self) -> bytes:
        parts = []
        for e in self.producers.values():
            parts.append(_ENTRY.pack(e.producer_id, e.epoch, e.last_timestamp,
                                     e.txn_first_offset, len(e.batches)))
            for b in e.batches:
                parts.append(_BATCH.pack(b.first_seq, b.last_seq, b.first_offset,
                                         b.last_offset, b.timestamp))
        body = struct.pack(">i", len(self.producers)) + b"".join(parts)
        return _MAGIC + struct.pack(">I", crc32c.crc32c(body)) + body

    @staticmethod
    def decode(data: bytes) -> dict[int, ProducerStateEntry]:
        """Raise ValueError on anything but a whole, CRC-valid snapshot."""
        if len(data) < _HEAD.size:
            raise ValueError("snapshot too short")
        magic, crc, count = _HEAD.unpack_from(data, 0)
        if magic != _MAGIC:
            raise ValueError(f"bad snapshot magic {magic!r}")
        if crc32c.crc32c(memoryview(data)[8:]) != crc:
            raise ValueError("snapshot CRC mismatch")
        pos, out = _HEAD.size, {}
        for _ in range(count):
            pid, epoch, ts, txn, n = _ENTRY.unpack_from(data, pos)
            pos += _ENTRY.size
            entry = ProducerStateEntry(pid, epoch, last_timestamp=ts, txn_first_offset=txn)
            for _ in range(n):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                pos += _BATCH.size
            out[pid] = entry
        if pos != len(data):
            raise ValueError("trailing bytes in snapshot")
        return out

    def take_snapshot(self, offset: int, *, fsync: bool = False) -> str:
        """Write the current state as <offset>.snapshot (temp file + rename, so a reader sees
        the old file or the new one, never half of one)."""
        path = snapshot_path(self.dir, offset)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(self.encode())
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def snapshot_offsets(self) -> list[int]:
        out = []
        for name in os.listdir(self.dir):
            if name.endswith(SNAPSHOT_SUFFIX):
                stem = name[:-len(SNAPSHOT_SUFFIX)]
                if stem.isdigit():
                    out.append(int(stem))
        return sorted(out)

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Load the newest valid snapshot at or below max_offset; returns its offset, or None
        (state cleared) when there is none. Invalid snapshots are deleted."""
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                continue
            path = snapshot_path(self.dir, offset)
            try:
                with open(path, "rb") as f:
                    self.producers = self.decode(f.read())
                return offset
            except (ValueError, struct.error, OSError) as e:
                log.warning("ignoring producer state snapshot %s: %s", path, e)
                _unlink(path)
        self.producers = {}
        return None

    def delete_snapshots_after(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                _unlink(snapshot_path(self.dir, o))

    def delete_snapshots_before(self, offset: int) -> None:
        """Drop snapshots below offset, always keeping the newest one."""
        offsets = self.snapshot_offsets()
        for o in offsets[:-1]:
            if o < offset:
                _unlink(snapshot_path(self.dir, o))

    def delete_all_snapshots(self) -> None:
        for o in self.snapshot_offsets():
            _unlink(snapshot_path(self.dir, o))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
