"""The log of one partition: an ordered list of segments in one directory.

Single-threaded by design: the broker calls it from its one asyncio thread, so appends and
reads never race (reads use pread below the segment's size, which only moves after a write
returned). fsyncs may run on other threads through SyncTickets (flush.py): a rolled segment is
flushed by a daemon thread, and a caller may run its own tickets in an executor; tickets work
on duplicated file descriptors and touch nothing but the recovery point.

Durability (see config.py):
- default (flush.messages = flush.ms = Long.MAX): no fsync on append; the page cache writes the
  data back; a rolled segment is fsynced in the background, which advances the recovery point;
- flush.messages = N / flush.ms = T with log.flush.policy "inline": append() fsyncs once N
  records or T ms have accumulated since the last flush;
- log.flush.policy "group": append() never fsyncs; the broker appends a whole batch of requests,
  calls `sync()` once per dirty log (one fsync covers every append since the previous sync),
  then answers them. With flush.messages = 1 that acknowledges only fsynced data, at the cost of
  one fsync per request batch instead of one per append. `begin_sync()` / `ticket.run()` /
  `finish_sync()` split the same work so that the fsync runs off the event loop;
- `flush()` fsyncs everything now, whatever the policy (the broker's own group commit).

High watermark and last stable offset are kept by the caller (pass max_offset to read()).
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from bisect import bisect_right
from concurrent.futures import Future
from dataclasses import dataclass

from ..protocol.errors import (CorruptMessageError, KafkaStorageError, MessageTooLargeError,
                               OffsetOutOfRangeError, RecordListTooLargeError)
from ..protocol.primitives import DecodeError
from ..protocol.records.header import (BatchHeader, TIMESTAMP_TYPE_BIT, parse_header,
                                       set_base_offset, set_log_append_time,
                                       set_partition_leader_epoch)
from .config import FLUSH_INLINE, LogConfig
from .flush import SyncTicket, dup_dir_fd, roll_flusher
from .leader_epoch import LeaderEpochCache
from .producer_state import ProducerStateManager
from .files import LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE
from .recovery import RecoveryReport, load_segments, mark_clean_shutdown, write_checkpoint
from .segment import Segment
from .txn_index import TxnIndex, abort_markers

log = logging.getLogger("gregor.log")

# Relative offsets in the index are uint32; roll well before a segment could overflow them.
MAX_RELATIVE_OFFSET = (1 << 31) - 1


class AppendOffsetError(ValueError):
    """A replicated append (assign_offsets=False) whose offsets do not continue the log."""


@dataclass(slots=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time_ms: int          # -1 when the batches keep their CreateTime
    log_start_offset: int
    duplicate: bool = False
    max_timestamp: int = -1
    record_count: int = 0


def _now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    def __init__(self, directory: str, config: LogConfig, loaded, clock):
        self.dir = directory
        self.config = config
        self._clock = clock
        self.segments: list[Segment] = loaded.segments
        self._bases = [s.base_offset for s in self.segments]
        self._log_start = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        self._persisted_recovery_point = -1
        self.recovery_report: RecoveryReport = loaded.report
        self._producers = ProducerStateManager(
            directory, reject_unknown_sequence=config.producer_reject_unknown_sequence)
        self.txn_index = TxnIndex(directory)
        self.leader_epochs = LeaderEpochCache(directory)
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        self._background: list[Future] = []       # fsyncs of rolled segments under way
        self._rp_lock = threading.Lock()
        self._generation = 0            # bumped by truncation: stale SyncTickets are ignored
        self._dir_dirty = True          # files were created that no directory fsync covers
        # the directory itself was just created: its name in the parent needs an fsync too
        self._parent_dirty = loaded.created
        self._closed = False
        # ids of segments whose files the cleaner is swapping (cleaner/cleaner.py): retention
        # leaves them, and every segment after them, for its next pass
        self.swapping: set[int] = set()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, directory, config: LogConfig | None = None, *, clock=None) -> "Log":
        """Open (creating if needed) the log in directory, recovering after an unclean stop.
        clock() returns the current time in ms (tests pass a fake one)."""
        directory = os.fspath(directory)
        config = config or LogConfig()
        clock = clock or _now_ms
        loaded = load_segments(directory, config, clock())
        self = cls(directory, config, loaded, clock)
        if self._log_start > self.log_end_offset:
            # Records below the log start were deleted on purpose; never serve them again.
            log.warning("log %s ends at %d, below its log start offset %d: starting empty at "
                        "%d", directory, self.log_end_offset, self._log_start, self._log_start)
            self.truncate_fully(self._log_start)
        self.txn_index.load(self._bases, self.log_end_offset)
        # recovery may have cut a torn tail the checkpoint already named an epoch for
        self.leader_epochs.truncate_from_end(self.log_end_offset)
        if loaded.created:
            # A new, empty log: no producer state to snapshot, and the checkpoints would only
            # say what their absence says (log start 0, nothing to recover); they are written
            # when they first say more. Files not made are files a busy disk waits on.
            return self
        self._rebuild_producer_state(clean=loaded.report.clean)
        self._persist_log_start()
        self._persist_recovery_point(force=True)
        return self

    def _rebuild_producer_state(self, *, clean: bool) -> None:
        """Latest snapshot at or below the log end, then replay the batches after it."""
        leo = self.log_end_offset
        self._producers.delete_snapshots_after(leo)
        snap = self._producers.load_latest_snapshot(leo)
        start = self.segments[0].base_offset if snap is None else snap
        if snap != leo:
            replayed = 0
            for seg in self.segments:
                if seg.next_offset <= start:
                    continue
                pos = seg.position_of(start)[0] if start > seg.base_offset else 0
                for at, h in seg.iter_headers(pos):
                    abort = (h.is_control and h.producer_id >= 0
                             and bool(abort_markers(os.pread(seg.fd, h.size, at), [(0, h)])))
                    done = self._producers.replay(h, abort=abort)
                    if done is not None:
                        # re-adds an entry a crash lost, mends one written wrong
                        self.txn_index.put(seg.base_offset, done.producer_id, done.first_offset,
                                           done.last_offset, done.last_stable_offset)
                    replayed += 1
            if replayed and not clean:
                log.info("log %s: rebuilt producer state from %s plus %d batches", self.dir,
                         f"snapshot {snap}" if snap is not None else "the log start", replayed)
            self._producers.take_snapshot(leo)

    # -- properties --------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def active_segment(self) -> Segment:
        return self.segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producers

    # -- appending ---------------------------------------------------------------------------

    def _parse_batches(self, buf: bytearray) -> list[tuple[int, BatchHeader]]:
        out, pos, n = [], 0, len(buf)
        limit = self.config.max_message_bytes
        while pos < n:
            try:
                h = parse_header(buf, pos)
            except DecodeError as e:
                raise CorruptMessageError(f"append at byte {pos}: {e}") from None
            if pos + h.size > n:
                raise CorruptMessageError(f"append: batch at byte {pos} needs {h.size} bytes, "
                                          f"only {n - pos} given")
            if h.size > limit:
                raise MessageTooLargeError(f"a batch of {h.size} bytes exceeds max.message.bytes"
                                           f" = {limit}; raise it for this topic or send "
                                           f"smaller batches")
            out.append((pos, h))
            pos += h.size
        if not out:
            raise CorruptMessageError("append: no record batch given")
        return out

    def append(self, data, *, assign_offsets: bool = True, timestamp_type: str | None = None,
               now_ms: int | None = None, check_sequence: bool = True,
               leader_epoch: int | None = None) -> AppendInfo:
        """Append one or more v2 batches (already validated by the caller).

        With assign_offsets (a client's produce) the log assigns offsets (a bytearray passed in
        is patched in place; bytes are left alone and the offsets are written into the file
        only) and enforces the producer-state rules; without
        (replication) the batches must continue the log at log_end_offset. timestamp_type
        defaults to the config's message.timestamp.type. check_sequence=False (a coordinator's
        own write for a producer) keeps the epoch rules but not the sequence ones.
        leader_epoch (a leader's append) is stamped into every batch as its
        partition_leader_epoch (outside the CRC); replicated batches keep theirs. Either way
        the leader epoch cache learns where each epoch began."""
        now = self._clock() if now_ms is None else now_ms
        ts_type = timestamp_type or self.config.message_timestamp_type
        stamp = ts_type == "LogAppendTime" and assign_offsets
        # bytes are immutable: unless the batches need restamping (a CRC change), the new base
        # offsets are spliced in while writing instead of copying the whole buffer
        if isinstance(data, bytearray):
            buf, in_place = data, True
        elif stamp:
            buf, in_place = bytearray(data), True
        else:
            buf, in_place = data, False
        batches = self._parse_batches(buf)
        # bytes are not copied for the epoch either: the segment writes it from the header
        stamp_epoch = leader_epoch is not None and assign_offsets
        if len(buf) > self.config.segment_bytes:
            raise RecordListTooLargeError(f"{len(buf)} bytes of batches exceed segment.bytes = "
                                          f"{self.config.segment_bytes}")
        producers = self._producers
        if assign_offsets:
            for _, h in batches:
                dup = producers.find_duplicate(h)
                if dup is not None:
                    return AppendInfo(dup.first_offset, dup.last_offset,
                                      dup.timestamp if ts_type == "LogAppendTime" else -1,
                                      self._log_start, duplicate=True,
                                      max_timestamp=dup.timestamp)
        next_offset = self.log_end_offset
        headers = []
        for pos, h in batches:
            if assign_offsets:
                if in_place:
                    set_base_offset(buf, pos, next_offset)
                    if stamp_epoch:
                        set_partition_leader_epoch(buf, pos, leader_epoch)
                h.base_offset = next_offset
                if stamp_epoch:
                    h.partition_leader_epoch = leader_epoch
            elif h.base_offset != next_offset:
                raise AppendOffsetError(f"replicated batch at offset {h.base_offset} does not "
                                        f"continue the log at {next_offset}; truncate first")
            next_offset = h.base_offset + h.last_offset_delta + 1
            headers.append(h)
        log_append_time = -1
        if stamp:
            log_append_time = now
            for pos, h in batches:
                set_log_append_time(buf, pos, h.size, now)
                h.max_timestamp = now
                h.attributes |= TIMESTAMP_TYPE_BIT
        has_control = any(h.is_control for h in headers)
        aborted: list = []
        aborts = {off for _, off in abort_markers(buf, batches)} if has_control else ()
        staged = producers.stage(headers, validate=assign_offsets,
                                 check_sequence=check_sequence, aborts=aborts, aborted=aborted)
        max_ts = (headers[0].max_timestamp if len(headers) == 1
                  else max(h.max_timestamp for h in headers))
        try:
            seg = self._maybe_roll(len(buf), next_offset - 1, max_ts, now)
            seg.append(buf, headers, offsets_in_buf=in_place)
        except OSError as e:
            raise KafkaStorageError(f"writing to {self.dir} failed: {e}; check the disk "
                                    f"(space, permissions) and restart the broker") from e
        for done in aborted:        # the segment just written holds every marker of buf
            self.txn_index.append(seg.base_offset, done.producer_id, done.first_offset,
                                  done.last_offset, done.last_stable_offset)
        producers.commit(staged)
        epochs = self.leader_epochs
        for h in headers:
            if h.partition_leader_epoch > epochs.latest_epoch:
                epochs.assign(h.partition_leader_epoch, h.base_offset)
        records = next_offset - headers[0].base_offset
        self._unflushed_messages += records
        if self.config.flush_policy == FLUSH_INLINE:
            self.sync(now)
        return AppendInfo(headers[0].base_offset, next_offset - 1, log_append_time,
                          self._log_start, False, max_ts, records)

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest transaction still open, or None."""
        return self._producers.first_unstable_offset()

    def collect_aborted_transactions(self, start: int, upper: int) -> list[tuple[int, int]]:
        """(producer_id, first_offset) of aborted transactions overlapping [start, upper)."""
        return self.txn_index.collect(start, upper)

    def _maybe_roll(self, size: int, last_offset: int, max_timestamp: int, now: int) -> Segment:
        seg = self.segments[-1]
        if seg.size == 0:
            return seg
        cfg = self.config
        if seg.first_batch_timestamp >= 0:
            waited = max_timestamp - seg.first_batch_timestamp
        else:
            waited = now - seg.created_ms
        if (seg.size + size > cfg.segment_bytes or waited > cfg.segment_ms
                or seg.index_full() or last_offset - seg.base_offset > MAX_RELATIVE_OFFSET):
            return self.roll(now)
        return seg

    def roll(self, now_ms: int | None = None) -> Segment:
        """Start a new active segment at the log end (no-op while the active one is empty).
        The old segment is fsynced (in a background thread by default) and then the recovery
        point moves past it."""
        old = self.segments[-1]
        if old.size == 0:
            return old
        now = self._clock() if now_ms is None else now_ms
        new_base = old.next_offset
        old.seal()
        self._producers.take_snapshot(new_base)
        new = Segment(self.dir, new_base, index_interval=self.config.index_interval_bytes,
                      max_index_entries=self.config.max_index_entries, now_ms=now)
        new.open_indexes_for_append()
        self.segments.append(new)
        self._bases.append(new_base)
        self._dir_dirty = True
        # every sealed segment not yet known durable: an earlier roll's flush may still run
        ticket = self._ticket(new_base, [s for s in self.segments[:-1]
                                         if s.next_offset > self._recovery_point])
        if self.config.flush_rolled_in_background:
            self._background = [f for f in self._background if not f.done()]
            self._background.append(roll_flusher().submit(self._flush_in_background, ticket))
        else:
            ticket.run()
            self.finish_sync(ticket)
        return new

    def _ticket(self, offset: int, segments: list[Segment],
                active_indexes: bool = True) -> SyncTicket:
        ticket = SyncTicket(offset, self._generation)
        active = self.segments[-1]
        for seg in segments:
            ticket.fds += seg.dup_fds(indexes=active_indexes or seg is not active)
        if self._dir_dirty:          # new segment files since the last sync: make names durable
            ticket.fds.append(dup_dir_fd(self.dir))
            self._dir_dirty = False
        if self._parent_dirty:       # a new log: its directory's name in the data directory
            ticket.fds.append(dup_dir_fd(os.path.dirname(os.path.abspath(self.dir))))
            self._parent_dirty = False
        return ticket

    def _flush_in_background(self, ticket: SyncTicket) -> None:
        try:
            ticket.run()
        except OSError as e:     # the next flush() retries these segments and raises
            log.error("log %s: fsync of a rolled segment failed: %s", self.dir, e)
            return
        self.finish_sync(ticket)

    def _join_background(self) -> None:
        for f in self._background:
            f.exception()            # waits; _flush_in_background logs its own failures
        self._background = []

    # -- flushing ----------------------------------------------------------------------------

    def sync(self, now_ms: int | None = None) -> bool:
        """fsync if flush.messages or flush.ms say a flush is due; returns whether it did.
        In group mode the caller invokes it once per batch of requests (or splits it into
        begin_sync / SyncTicket.run in an executor / finish_sync); a timer may call it too, so
        that flush.ms is honoured when no appends come."""
        ticket = self.begin_sync(now_ms)
        if ticket is None:
            return False
        ticket.run()
        self.finish_sync(ticket)
        return True

    def begin_sync(self, now_ms: int | None = None, *, force: bool = False,
                   active_indexes: bool = True) -> SyncTicket | None:
        """Capture the fsync work that is due (or all unflushed data with force); None when
        there is nothing to do. Call on the log's thread; run the ticket anywhere.

        active_indexes=False leaves the active segment's index files out (they stay marked
        dirty, so the roll's flush or a clean close fsyncs them): after an unclean stop
        recovery always scans the active segment and rebuilds its indexes from the log, so
        the data's durability does not depend on them. A broker's group commit uses it: an
        index entry every index.interval.bytes otherwise puts two more fsyncs into every
        few rounds of small writes, and those rounds set the tail latency."""
        now = self._clock() if now_ms is None else now_ms
        if not force:
            if self._unflushed_messages == 0:
                return None
            cfg = self.config
            if (self._unflushed_messages < cfg.flush_messages
                    and now - self._last_flush_ms < cfg.flush_ms):
                return None
        self._unflushed_messages = 0
        self._last_flush_ms = now
        return self._ticket(self.log_end_offset, [s for s in self.segments
                                                  if s.next_offset > self._recovery_point
                                                  or s is self.segments[-1]],
                            active_indexes=active_indexes)

    def finish_sync(self, ticket: SyncTicket) -> None:
        """After ticket.run() succeeded: move the recovery point (ignored if the log was
        truncated meanwhile, since the ticket's offset may no longer mean the same data)."""
        with self._rp_lock:
            if ticket.generation == self._generation and ticket.offset > self._recovery_point:
                self._recovery_point = ticket.offset
                self._persist_recovery_point_locked()

    def flush(self, now_ms: int | None = None) -> None:
        """fsync everything appended so far and move the recovery point to the log end."""
        self._join_background()
        ticket = self.begin_sync(now_ms, force=True)
        ticket.run()
        self.finish_sync(ticket)
        if self.txn_index.entries:
            self.txn_index.flush()

    def _persist_recovery_point(self, *, force: bool = False) -> None:
        with self._rp_lock:
            self._persist_recovery_point_locked(force=force)

    def _persist_recovery_point_locked(self, *, force: bool = False) -> None:
        # Recovery scans from the start of the segment holding the recovery point, so the
        # file only needs rewriting when that segment changes.
        rp = self._recovery_point
        if (force or self._segment_index(rp) != self._segment_index(self._persisted_recovery_point)
                or rp < self._persisted_recovery_point):
            write_checkpoint(self.dir, RECOVERY_POINT_FILE, rp)
            self._persisted_recovery_point = rp

    def _persist_log_start(self) -> None:
        write_checkpoint(self.dir, LOG_START_OFFSET_FILE, self._log_start)

    def _segment_index(self, offset: int) -> int:
        return bisect_right(self._bases, offset) - 1

    # -- reading -----------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Raw batches starting with the one containing offset, whole batches only, at most
        max_bytes (but at least one whole batch when min_one_batch), none starting at or
        after max_offset (the caller's high watermark). b"" at the end."""
        leo = self.log_end_offset
        if offset < self._log_start or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log's range [{self._log_start}, {leo}]; "
                f"reset the position to the log start or end")
        if offset == leo or (max_offset is not None and offset >= max_offset):
            return b""
        i = max(self._segment_index(offset), 0)
        for seg in self.segments[i:]:
            pos, h = seg.position_of(offset)
            if h is None:
                continue
            end = seg.size
            if max_offset is not None and max_offset < seg.next_offset:
                end = seg.position_of(max_offset)[0]
            if end <= pos:
                return b""
            if pos + max_bytes >= end:
                return seg.read(pos, end - pos)
            boundary = seg.boundary_at_or_before(pos, pos + max_bytes)
            if boundary == pos:
                if not min_one_batch:
                    return b""
                boundary = pos + h.size
            return seg.read(pos, boundary - pos)
        return b""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch whose max timestamp is >= timestamp, or None.

        Batch granularity: the log does not decode records, so the offset is the base offset of
        that batch (never past the first record with a timestamp >= the target; a caller that
        needs the exact record decodes the one batch read(offset, ...) returns)."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp or seg.next_offset <= self._log_start:
                continue
            rel = seg.time_index.lookup(timestamp)
            start = max(seg.base_offset + rel, self._log_start)
            pos = seg.position_of(start)[0]
            for _, h in seg.iter_headers(pos):
                if h.max_timestamp >= timestamp and h.base_offset + h.last_offset_delta >= self._log_start:
                    return max(h.base_offset, self._log_start), h.max_timestamp
        return None

    # -- removing ----------------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to offset (DeleteRecords); whole segments below it are
        deleted. Returns the new log start offset."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"cannot delete records before {offset}: the log ends "
                                        f"at {self.log_end_offset}")
        if offset > self._log_start:
            self._log_start = offset
            self._persist_log_start()
            doomed = self._segments_below_log_start()
            if not any(id(s) in self.swapping for s in doomed):   # else retention does it
                self._delete_segments(doomed)
        return self._log_start

    def _segments_below_log_start(self) -> list[Segment]:
        return [s for s in self.segments[:-1] if s.next_offset <= self._log_start]

    def apply_retention(self, now_ms: int | None = None, *,
                        high_watermark: int | None = None) -> int:
        """Delete old segments by retention.ms, retention.bytes and the log start offset, and
        forget producers idle past producer.id.expiration.ms. Never deletes data at or above
        high_watermark when given. Returns the number of segments deleted."""
        now = self._clock() if now_ms is None else now_ms
        cfg = self.config
        self._producers.remove_expired(now, cfg.producer_id_expiration_ms)
        hw = self.log_end_offset if high_watermark is None else high_watermark
        deletable: list[Segment] = []
        candidates = [s for s in self.segments if s.size > 0 and s.next_offset <= hw]
        if cfg.retention_ms >= 0 and cfg.delete:
            for seg in candidates:
                if self._largest_timestamp(seg) >= now - cfg.retention_ms:
                    break
                deletable.append(seg)
        if cfg.retention_bytes >= 0 and cfg.delete:
            excess = self.size_bytes - cfg.retention_bytes - sum(s.size for s in deletable)
            for seg in candidates[len(deletable):]:
                if excess - seg.size < 0:
                    break
                deletable.append(seg)
                excess -= seg.size
        deletable += [s for s in self._segments_below_log_start() if s not in deletable]
        if not deletable or any(id(s) in self.swapping for s in deletable):
            return 0
        if any(s is self.segments[-1] for s in deletable):
            self.roll(now)      # the active segment itself expired: continue in a new one
        self._delete_segments(deletable)
        return len(deletable)

    @staticmethod
    def _largest_timestamp(seg: Segment) -> int:
        if seg.max_timestamp >= 0:
            return seg.max_timestamp
        return int(os.stat(seg.log_path).st_mtime * 1000)   # batches without timestamps

    def _delete_segments(self, doomed: list[Segment]) -> None:
        doomed_ids = {id(s) for s in doomed}
        for seg in doomed:
            log.info("log %s: deleting segment %d (%d bytes, offsets %d..%d)", self.dir,
                     seg.base_offset, seg.size, seg.base_offset, seg.next_offset - 1)
            seg.delete()
        self.segments = [s for s in self.segments if id(s) not in doomed_ids]
        self._bases = [s.base_offset for s in self.segments]
        self.txn_index.drop_segments([s.base_offset for s in doomed])
        first = self.segments[0].base_offset
        if first > self._log_start:
            self._log_start = first
            self._persist_log_start()
        self._producers.delete_snapshots_before(first)

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after offset (replication: a follower's divergent tail).
        A batch containing offset goes whole, so the log may end a little before offset."""
        if offset >= self.log_end_offset:
            return
        if offset < self._log_start:
            self.truncate_fully(offset)
            return
        self._join_background()
        self._generation += 1
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        self._bases = [s.base_offset for s in self.segments]
        seg = self.segments[-1]
        removed = seg.truncate_to(offset)
        seg.open_indexes_for_append()
        leo = self.log_end_offset
        log.info("log %s: truncated to offset %d (asked %d, %d bytes removed from the last "
                 "segment)", self.dir, leo, offset, removed)
        if self._log_start > leo:
            self._log_start = leo
            self._persist_log_start()
        with self._rp_lock:
            self._recovery_point = min(self._recovery_point, leo)
            self._persist_recovery_point_locked()
        self.txn_index.truncate_to(leo)
        self.leader_epochs.truncate_from_end(leo)
        self._rebuild_producer_state(clean=True)

    def truncate_fully(self, new_start: int) -> None:
        """Delete everything and start an empty log at new_start."""
        self._join_background()
        self._generation += 1
        self.txn_index.clear_files(self._bases)
        for seg in self.segments:
            seg.delete()
        self._producers.delete_all_snapshots()
        self._producers.clear()
        self.leader_epochs.clear()
        seg = Segment(self.dir, new_start, index_interval=self.config.index_interval_bytes,
                      max_index_entries=self.config.max_index_entries, now_ms=self._clock())
        seg.open_indexes_for_append()
        self.segments = [seg]
        self._bases = [new_start]
        self._dir_dirty = True
        self._log_start = new_start
        self._persist_log_start()
        with self._rp_lock:
            self._recovery_point = new_start
            self._persist_recovery_point_locked(force=True)

    # -- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush everything, snapshot the producer state and mark the shutdown clean."""
        if self._closed:
            return
        self.flush()
        self._producers.take_snapshot(self.log_end_offset, fsync=True)
        self._persist_log_start()
        self._persist_recovery_point(force=True)
        for seg in self.segments:
            seg.close()
        mark_clean_shutdown(self.dir)
        self._closed = True

    def delete(self) -> None:
        """Close without flushing and remove the directory (the topic was deleted)."""
        self._join_background()
        for seg in self.segments:
            seg.close()
        self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)

    def abandon(self) -> None:
        """Close file descriptors without flushing or marking a clean shutdown: what a crash
        leaves behind (for tests and for the broker's kill paths)."""
        self._join_background()
        for seg in self.segments:
            seg.close()
        self._closed = True

    def __repr__(self) -> str:
        return (f"Log({self.dir!r}, start={self._log_start}, end={self.log_end_offset}, "
                f"segments={len(self.segments)})")
