"""One segment of a partition's log: a `.log` file of v2 record batches exactly as they travel
on the wire, plus its sparse `.index` and `.timeindex` (see index.py for their format).

Files are named by the segment's base offset, zero-padded to 20 digits
(`00000000000000001234.log`), so that a directory listing sorts them in offset order.

Batches are read with `os.pread` and written with `os.pwrite` at the segment's known size, so a
read never sees a half-written batch: readers only look below `size`, which moves after the
write returned. The log never decodes records: only the 61-byte batch headers are parsed
(gregor.protocol.records.header).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..protocol.primitives import DecodeError
from ..protocol.records.header import (HEADER_SIZE, LOG_OVERHEAD, BatchHeader, crc_ok,
                                       entry_size, parse_header)
from .index import IndexCorrupt, OffsetIndex, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
# Scans read the file in chunks of this size: large enough that small batches cost one
# syscall per many batches, small enough to stay cheap in memory.
SCAN_CHUNK = 1 << 20


# pwritev takes at most IOV_MAX buffers per call (1024 on Linux).
_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)
_BASE_OFFSET = struct.Struct(">q")
_HEAD16 = struct.Struct(">qii")     # base offset, batch length, partition leader epoch


def _pwrite_all(fd: int, parts: list, at: int, total: int) -> None:
    """Write the buffers (total bytes together) back to back at byte `at`."""
    if len(parts) == 1:
        done = os.pwrite(fd, parts[0], at)
    elif len(parts) <= _IOV_MAX:
        done = os.pwritev(fd, parts, at)
    else:
        done = 0
        for i in range(0, len(parts), _IOV_MAX):
            group = parts[i:i + _IOV_MAX]
            want = sum(len(p) for p in group)
            n = os.pwritev(fd, group, at + done)
            done += n
            if n < want:
                break
    if done < total:                     # short write (rare on files): finish it plainly
        rest = memoryview(b"".join(bytes(p) for p in parts))[done:]
        while len(rest):
            n = os.pwrite(fd, rest, at + done)
            done += n
            rest = rest[n:]


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(slots=True)
class ScanResult:
    """What a scan of a segment found: where the valid batches end and why it stopped."""
    end_position: int        # byte just after the last valid batch
    next_offset: int         # offset after the last valid batch
    max_timestamp: int
    batches: int
    error: str | None        # None when the scan reached the end of the file cleanly


class Segment:
    __slots__ = ("dir", "base_offset", "log_path", "fd", "size", "next_offset",
                 "max_timestamp", "first_batch_timestamp", "created_ms", "offset_index",
                 "time_index", "bytes_since_index", "max_index_entries", "index_interval",
                 "allow_gaps")

    def __init__(self, directory: str, base_offset: int, *, index_interval: int,
                 max_index_entries: int, now_ms: int, suffix: str = ""):
        # suffix: ".cleaned" / ".swap" for the cleaner's files (see cleaner/swap.py)
        self.dir = directory
        self.base_offset = base_offset
        stem = os.path.join(directory, segment_name(base_offset))
        self.log_path = stem + LOG_SUFFIX + suffix
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.first_batch_timestamp = -1
        self.created_ms = now_ms
        self.offset_index = OffsetIndex(stem + INDEX_SUFFIX + suffix)
        self.time_index = TimeIndex(stem + TIMEINDEX_SUFFIX + suffix)
        self.bytes_since_index = 0
        self.index_interval = index_interval
        self.max_index_entries = max_index_entries
        # compacted segments have gaps between batches; elsewhere a gap means corruption
        self.allow_gaps = False

    # -- opening -------------------------------------------------------------------------

    def load_indexes(self) -> None:
        """Trust the index files (clean shutdown, or below the recovery point) and rebuild
        only the state after the last index entry, checking that tail as recovery would.
        Raises IndexCorrupt when the files or the tail do not check out; the caller then
        recovers the whole segment."""
        self.offset_index.load(self.size)
        last_rel = self.offset_index.rel_offsets[-1] if len(self.offset_index) else 0
        self.time_index.load(last_rel)
        if len(self.time_index) and self.time_index.rel_offsets[-1] > last_rel:
            raise IndexCorrupt(f"{self.time_index.path} runs ahead of {self.offset_index.path}")
        result = self._resume_from_last_entry(verify_crc=True)
        if result.error is not None or result.end_position != self.size:
            raise IndexCorrupt(f"{self.log_path}: tail check failed ({result.error})")

    def _resume_from_last_entry(self, *, verify_crc: bool) -> ScanResult:
        """Recompute next_offset, max_timestamp and the index cadence from the last index
        entry to the end of the file (the entries before it stay as they are)."""
        if len(self.offset_index):
            start = self.offset_index.positions[-1]
            expected = self.base_offset + self.offset_index.rel_offsets[-1]
        else:
            start, expected = 0, self.base_offset
        running_max, _ = self.time_index.last_entry()
        result = self.scan(start, expected, running_max, verify_crc=verify_crc,
                           add_index_entries=False)
        self.next_offset = result.next_offset
        self.max_timestamp = result.max_timestamp
        self.bytes_since_index = result.end_position - start
        self._read_first_batch_timestamp()
        return result

    def _read_first_batch_timestamp(self) -> None:
        if self.size >= HEADER_SIZE:
            try:
                self.first_batch_timestamp = self.header_at(0).max_timestamp
            except DecodeError:
                self.first_batch_timestamp = -1
        else:
            self.first_batch_timestamp = -1

    def recover(self, *, expected_offset: int) -> ScanResult:
        """Rebuild both indexes from the log, checking every batch (CRC, structure, offsets)
        and truncating the file at the first invalid or partial batch."""
        self.offset_index.reset()
        self.time_index.reset()
        result = self.scan(0, expected_offset, -1, verify_crc=True, add_index_entries=True)
        self.offset_index.save()        # scan built the entries in memory only
        self.time_index.save()
        if result.end_position < self.size:
            os.ftruncate(self.fd, result.end_position)
            self.size = result.end_position
        self.next_offset = result.next_offset
        self.max_timestamp = result.max_timestamp
        self._read_first_batch_timestamp()
        return result

    # -- scanning ------------------------------------------------------------------------

    def scan(self, start: int, expected_offset: int, running_max: int, *, verify_crc: bool,
             add_index_entries: bool) -> ScanResult:
        """Walk batches from byte `start`, whose first batch must begin at expected_offset
        (or after it, in a segment with allow_gaps: compaction leaves gaps, never overlaps).

        Stops at the first batch that is partial, malformed, fails its CRC (when verify_crc)
        or does not continue the offsets. With add_index_entries the index entries are
        appended as append() would have done (same cadence), so a rebuilt index equals the
        original one."""
        pos, end = start, self.size
        bytes_since = 0
        batches = 0
        error = None
        chunk, chunk_start = b"", start
        while pos < end:
            rel = pos - chunk_start
            if rel + LOG_OVERHEAD > len(chunk):
                chunk_start, chunk = pos, os.pread(self.fd, min(SCAN_CHUNK, end - pos), pos)
                rel = 0
            try:
                size = entry_size(chunk, rel)
                if size is None:
                    error = f"partial batch at byte {pos}"
                    break
                if pos + size > end:
                    error = f"partial batch at byte {pos}: needs {size} bytes, {end - pos} left"
                    break
                if rel + size > len(chunk):
                    if verify_crc or size <= SCAN_CHUNK:
                        chunk_start, chunk = pos, os.pread(self.fd, max(size, min(SCAN_CHUNK, end - pos)), pos)
                    else:
                        chunk_start, chunk = pos, os.pread(self.fd, HEADER_SIZE, pos)
                    rel = 0
                h = parse_header(chunk, rel)
            except DecodeError as e:
                error = f"malformed batch at byte {pos}: {e}"
                break
            if h.base_offset < expected_offset or (h.base_offset != expected_offset
                                                   and not self.allow_gaps):
                error = (f"batch at byte {pos} has base offset {h.base_offset}, "
                         f"expected {expected_offset}")
                break
            if h.last_offset_delta < 0 or h.records_count < 0:
                error = f"batch at byte {pos} has a negative offset delta or record count"
                break
            if verify_crc and not crc_ok(chunk, rel, h):
                error = f"CRC mismatch in batch at byte {pos} (offset {h.base_offset})"
                break
            if add_index_entries:
                if (bytes_since >= self.index_interval and pos > 0
                        and not self.index_full()):
                    self._add_index_entry(h.base_offset, pos, running_max)
                    bytes_since = 0
                bytes_since += size
            if h.max_timestamp > running_max:
                running_max = h.max_timestamp
            expected_offset = h.base_offset + h.last_offset_delta + 1
            pos += size
            batches += 1
        if add_index_entries:
            self.bytes_since_index = bytes_since
        return ScanResult(pos, expected_offset, running_max, batches, error)

    def iter_headers(self, start: int = 0):
        """Yield (position, BatchHeader) for every batch from byte start; reads only headers
        of large batches (used to replay producer state and to find timestamps)."""
        pos, end = start, self.size
        chunk, chunk_start = b"", start
        while pos + HEADER_SIZE <= end:
            rel = pos - chunk_start
            if rel + HEADER_SIZE > len(chunk):
                chunk_start, chunk = pos, os.pread(self.fd, min(SCAN_CHUNK, end - pos), pos)
                rel = 0
            h = parse_header(chunk, rel)
            yield pos, h
            pos += h.size

    # -- appending -----------------------------------------------------------------------

    def _add_index_entry(self, base_offset: int, position: int, running_max: int) -> None:
        rel = base_offset - self.base_offset
        self.offset_index.append(rel, position)
        if running_max >= 0:
            self.time_index.maybe_append(running_max, rel)

    def index_full(self) -> bool:
        return len(self.offset_index) >= self.max_index_entries

    def append(self, buf, headers: list[BatchHeader], *, offsets_in_buf: bool = True) -> None:
        """Write buf (whole batches) at the end of the segment. With offsets_in_buf=False the
        base offsets (and partition leader epochs) in buf are stale and each header's are
        written in their place on the way out, so an immutable bytes buffer is never
        copied."""
        # write first: if the disk fails, nothing in memory has moved and the next append
        # overwrites whatever part of this one reached the file
        total = len(buf)
        if offsets_in_buf:
            _pwrite_all(self.fd, [buf], self.size, total)
        else:
            view, parts, at = memoryview(buf), [], 0
            for h in headers:
                size = h.batch_length + LOG_OVERHEAD
                # base offset, length and partition leader epoch all lie before the CRC
                parts.append(_HEAD16.pack(h.base_offset, h.batch_length,
                                          h.partition_leader_epoch))
                parts.append(view[at + 16:at + size])
                at += size
            _pwrite_all(self.fd, parts, self.size, total)
        pos = self.size
        interval = self.index_interval
        for h in headers:
            size = h.batch_length + LOG_OVERHEAD
            if (self.bytes_since_index >= interval and pos > 0
                    and len(self.offset_index.rel_offsets) < self.max_index_entries):
                self._add_index_entry(h.base_offset, pos, self.max_timestamp)
                self.bytes_since_index = 0
            self.bytes_since_index += size
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp = h.max_timestamp
            pos += size
        if self.size == 0:
            self.first_batch_timestamp = headers[0].max_timestamp
        self.size += len(buf)
        self.next_offset = headers[-1].base_offset + headers[-1].last_offset_delta + 1

    # -- reading -------------------------------------------------------------------------

    def header_at(self, pos: int) -> BatchHeader:
        return parse_header(os.pread(self.fd, HEADER_SIZE, pos))

    def position_of(self, offset: int) -> tuple[int, BatchHeader | None]:
        """(position, header) of the batch containing offset, or of the first batch after it;
        (size, None) when offset is at or past this segment's end."""
        if offset >= self.next_offset:
            return self.size, None
        pos = self.offset_index.lookup(max(0, offset - self.base_offset))
        end = self.size
        while pos < end:
            h = self.header_at(pos)
            if h.base_offset + h.last_offset_delta >= offset:
                return pos, h
            pos += h.size
        return end, None

    def boundary_at_or_before(self, start: int, limit: int) -> int:
        """The largest batch boundary b with start <= b <= limit (start is a boundary)."""
        pos = max(start, self.offset_index.lookup_position(limit))
        while True:
            nxt = pos + self.header_at(pos).size if pos < self.size else None
            if nxt is None or nxt > limit:
                return pos
            pos = nxt

    def read(self, pos: int, n: int) -> bytes:
        return os.pread(self.fd, n, pos)

    # -- changing ------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch that ends at or after offset (a batch containing offset goes
        whole). Returns the bytes removed."""
        pos, h = self.position_of(offset)
        if h is None:
            return 0
        removed = self.size - pos
        os.ftruncate(self.fd, pos)
        self.size = pos
        rel = h.base_offset - self.base_offset
        self.offset_index.truncate_to_offset(rel)
        self.time_index.truncate_to_offset(rel)
        self._resume_from_last_entry(verify_crc=False)
        return removed

    def open_indexes_for_append(self) -> None:
        self.offset_index.open_for_append()
        self.time_index.open_for_append()

    def seal(self) -> None:
        """This segment stops being the active one: its index files are closed (a later
        SyncTicket reopens and fsyncs them if they changed since the last one)."""
        self.offset_index.close()
        self.time_index.close()

    def dup_fds(self, indexes: bool = True) -> list[int]:
        """Duplicates of every open descriptor that may hold unflushed data (see flush.py);
        indexes=False: the log file's only (dirty index files stay marked dirty)."""
        fds = [os.dup(self.fd)]
        if not indexes:
            return fds
        for idx in (self.offset_index, self.time_index):
            if idx.dirty:
                if idx._fd is None:
                    fds.append(os.open(idx.path, os.O_RDONLY))
                else:
                    fds.append(os.dup(idx._fd))
                idx.dirty = False
        return fds

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return (f"Segment(base={self.base_offset}, next={self.next_offset}, "
                f"size={self.size})")
