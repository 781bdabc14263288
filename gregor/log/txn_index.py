"""The aborted-transaction index of a partition log: Kafka's `.txnindex`.

read_committed consumers filter aborted records themselves; the broker tells them, with each
fetch, which transactions overlapping the fetched range were aborted ((producer id, first
offset) pairs). This index answers that without reading records: an entry is written when an
ABORT marker is appended, into the `.txnindex` file of the segment that holds the marker.

File format (Kafka's): a sequence of 34-byte entries, big-endian: version int16 (0),
producer_id int64, first_offset int64, last_offset int64 (the marker's offset),
last_stable_offset int64 (the partition's LSO when the marker was written).

Entries are few (one per aborted transaction and partition, bounded by retention), so the
whole index of a log is also kept in memory, sorted by last offset. Entries are computed batch by
batch from the producer state as it is at each marker (a follower's fetched chunk may hold a
transaction's first batch and its marker). A crash between writing a marker and its entry is
repaired by recovery, which replays the batches after the last producer-state snapshot and
re-adds (or mends) the entries of the ABORT markers it meets.
"""
from __future__ import annotations

import bisect
import logging
import os
import struct
from dataclasses import dataclass

log = logging.getLogger("gregor.log")

SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
VERSION = 0


@dataclass(frozen=True, order=True)
class AbortedTxn:
    last_offset: int             # first for ordering: the marker's offset
    producer_id: int
    first_offset: int
    last_stable_offset: int


def index_path(directory: str, segment_base: int) -> str:
    return os.path.join(directory, f"{segment_base:020d}{SUFFIX}")


class TxnIndex:
    def __init__(self, directory: str):
        self.dir = directory
        self.entries: list[AbortedTxn] = []          # sorted by last_offset
        self._segment_of: dict[AbortedTxn, int] = {}

    def load(self, segment_bases: list[int], log_end: int) -> None:
        """Read the index files of these segments; entries at or past log_end (their marker
        was cut by recovery) are dropped and their files rewritten."""
        self.entries, self._segment_of = [], {}
        for base in segment_bases:
            path = index_path(self.dir, base)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            kept, dropped = [], 0
            whole = len(data) - len(data) % _ENTRY.size      # a torn last entry is ignored
            for pos in range(0, whole, _ENTRY.size):
                version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
                if version != VERSION or last >= log_end or first > last:
                    dropped += 1
                    continue
                kept.append(AbortedTxn(last, pid, first, lso))
            if dropped or whole != len(data):
                log.info("%s: dropped %d aborted-transaction entries past the log end",
                         path, dropped)
                self._rewrite(base, kept)
            for e in kept:
                self._segment_of[e] = base
            self.entries.extend(kept)
        self.entries.sort()

    def append(self, segment_base: int, producer_id: int, first_offset: int,
               last_offset: int, last_stable_offset: int) -> None:
        e = AbortedTxn(last_offset, producer_id, first_offset, last_stable_offset)
        with open(index_path(self.dir, segment_base), "ab") as f:
            f.write(_ENTRY.pack(VERSION, producer_id, first_offset, last_offset,
                                last_stable_offset))
        bisect.insort(self.entries, e)
        self._segment_of[e] = segment_base

    def put(self, segment_base: int, producer_id: int, first_offset: int, last_offset: int,
            last_stable_offset: int) -> None:
        """append() unless the same entry is there; an entry for the same marker that says
        something else is replaced (recovery recomputed it from the log)."""
        e = AbortedTxn(last_offset, producer_id, first_offset, last_stable_offset)
        if e in self._segment_of:
            return
        stale = [x for x in self.entries
                 if x.last_offset == last_offset and x.producer_id == producer_id]
        if not stale:
            self.append(segment_base, producer_id, first_offset, last_offset,
                        last_stable_offset)
            return
        log.warning("%s: aborted-transaction entry %s replaced by %s, recomputed from the log",
                    self.dir, stale[0], e)
        touched = {self._segment_of.pop(x) for x in stale} | {segment_base}
        self.entries = [x for x in self.entries if x not in stale]
        bisect.insort(self.entries, e)
        self._segment_of[e] = segment_base
        for base in touched:
            self._rewrite(base, [x for x in self.entries if self._segment_of.get(x) == base])

    def collect(self, start: int, upper: int) -> list[tuple[int, int]]:
        """(producer_id, first_offset) of aborted transactions overlapping [start, upper):
        their marker is at or after start and they began before upper."""
        i = bisect.bisect_left(self.entries, AbortedTxn(start, -(1 << 63), 0, 0))
        return [(e.producer_id, e.first_offset) for e in self.entries[i:]
                if e.first_offset < upper]

    def overlapping(self, start: int, upper: int) -> list[AbortedTxn]:
        """The aborted transactions (with their marker offsets) overlapping [start, upper)."""
        i = bisect.bisect_left(self.entries, AbortedTxn(start, -(1 << 63), 0, 0))
        return [e for e in self.entries[i:] if e.first_offset < upper]

    def drop_segments(self, bases: list[int]) -> None:
        """Retention removed these segments: their entries and files go too."""
        gone = set(bases)
        self.entries = [e for e in self.entries if self._segment_of.get(e) not in gone]
        self._segment_of = {e: b for e, b in self._segment_of.items() if b not in gone}
        for b in bases:
            _unlink(index_path(self.dir, b))

    def truncate_to(self, offset: int) -> None:
        """Entries whose marker is at or after offset go (the marker was truncated)."""
        doomed = [e for e in self.entries if e.last_offset >= offset]
        if not doomed:
            return
        touched = {self._segment_of.pop(e) for e in doomed}
        self.entries = [e for e in self.entries if e.last_offset < offset]
        for base in touched:
            self._rewrite(base, [e for e in self.entries if self._segment_of.get(e) == base])

    def clear_files(self, bases) -> None:
        for b in bases:
            _unlink(index_path(self.dir, b))
        self.entries, self._segment_of = [], {}

    def flush(self) -> None:
        """fsync every index file (with the segments, when the log is flushed)."""
        for base in set(self._segment_of.values()):
            try:
                fd = os.open(index_path(self.dir, base), os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _rewrite(self, base: int, entries: list[AbortedTxn]) -> None:
        path = index_path(self.dir, base)
        if not entries:
            _unlink(path)
            return
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            for e in sorted(entries):
                f.write(_ENTRY.pack(VERSION, e.producer_id, e.first_offset, e.last_offset,
                                    e.last_stable_offset))
        os.replace(tmp, path)


def abort_markers(buf, batches) -> list[tuple[int, int]]:
    """(producer_id, marker offset) of the ABORT control batches among (position, header)
    pairs of buf (control batches are rare: decoding them is cheap)."""
    from ..protocol.records.batch import CONTROL_ABORT, decode_batch
    out = []
    for pos, h in batches:
        if h.is_control and h.producer_id >= 0:
            if decode_batch(buf, pos, verify_crc=False).control_type == CONTROL_ABORT:
                out.append((h.producer_id, h.base_offset))
    return out


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
