"""Sparse offset and time indexes of one segment, kept in memory and appended to a file.

File formats (gregor's own, little-endian, no header; a file is just its entries):
- `.index`: 8-byte entries `(relative_offset: uint32, position: uint32)`. relative_offset is a
  batch's base offset minus the segment's base offset; position is the byte where that batch
  starts in the `.log` file. Entries are strictly increasing in both fields.
- `.timeindex`: 12-byte entries `(timestamp: int64, relative_offset: uint32)`, meaning "every
  batch of this segment that starts before relative_offset has max_timestamp <= timestamp".
  Timestamps are strictly increasing, relative offsets too.

An entry is added when at least index.interval.bytes of log were written since the previous
one, so a lookup lands at most about that many bytes before its target. The first batch of a
segment needs no entry (a lookup that finds nothing starts at position 0).

The files are a cache: after an unclean stop recovery rebuilds them from the log, and `load`
rejects a file that is not a whole number of sane entries (the caller then rebuilds).
"""
from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right

import numpy as np

_OFFSET_ENTRY = 8
_TIME_ENTRY = 12
_TIME = struct.Struct("<qI")
_TIME_DTYPE = np.dtype([("ts", "<i8"), ("rel", "<u4")])     # packed: 12 bytes, like _TIME


def _u32(data: bytes) -> array:
    a = array("I")
    a.frombytes(data)
    if sys.byteorder == "big":   # the files are little-endian everywhere
        a.byteswap()
    return a


class IndexCorrupt(ValueError):
    """An index file that cannot be trusted; rebuild it from the log."""


class _IndexFile:
    """What both indexes do with their file: read it whole, append through an O_APPEND
    descriptor, and rewrite it after truncation or a rebuild."""

    __slots__ = ("path", "_fd", "dirty")

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self.dirty = False          # entries written since the last sync took its descriptor

    def _read_entries(self, entry_size: int) -> bytes:
        """The file's bytes; IndexCorrupt when it is missing or ends inside an entry."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise IndexCorrupt(f"{self.path} is missing") from None
        if len(data) % entry_size:
            raise IndexCorrupt(f"{self.path} holds a partial entry")
        return data

    def open_for_append(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def save(self) -> None:
        """Make the file match memory (after truncation or a rebuild)."""
        self._rewrite()

    def _rewrite(self) -> None:
        raise NotImplementedError

    def _replace_file(self, data: bytes) -> None:
        """Replace the file's content in place (the append fd, if any, keeps working:
        O_APPEND)."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 0)
            if data:
                os.pwrite(fd, data, 0)
        finally:
            os.close(fd)
        self.dirty = True


class OffsetIndex(_IndexFile):
    """relative offset -> position, for the batch starting at that offset."""

    __slots__ = ("rel_offsets", "positions")

    def __init__(self, path: str):
        super().__init__(path)
        self.rel_offsets = array("I")
        self.positions = array("I")

    def __len__(self) -> int:
        return len(self.rel_offsets)

    def load(self, log_size: int) -> None:
        """Read the file; raise IndexCorrupt unless every entry is sane for a log of log_size."""
        data = self._read_entries(_OFFSET_ENTRY)
        pairs = np.frombuffer(data, dtype="<u4").reshape(-1, 2)
        if len(pairs) > 1 and not (np.all(np.diff(pairs[:, 0].astype(np.int64)) > 0)
                                   and np.all(np.diff(pairs[:, 1].astype(np.int64)) > 0)):
            raise IndexCorrupt(f"{self.path}: entries are not increasing")
        both = _u32(data)
        rel, pos = both[0::2], both[1::2]
        if len(pos) and pos[-1] >= log_size:
            raise IndexCorrupt(f"{self.path}: position {pos[-1]} beyond log size {log_size}")
        self.rel_offsets, self.positions = rel, pos

    def append(self, rel_offset: int, position: int) -> None:
        self.rel_offsets.append(rel_offset)
        self.positions.append(position)
        if self._fd is not None:
            os.write(self._fd, struct.pack("<II", rel_offset, position))
            self.dirty = True

    def lookup(self, rel_offset: int) -> int:
        """Position of the last indexed batch starting at or before rel_offset (0 if none)."""
        i = bisect_right(self.rel_offsets, rel_offset)
        return self.positions[i - 1] if i else 0

    def lookup_position(self, position: int) -> int:
        """The last indexed batch position at or before position (0 if none)."""
        i = bisect_right(self.positions, position)
        return self.positions[i - 1] if i else 0

    def truncate_to_offset(self, rel_offset: int) -> None:
        """Drop entries for batches starting at or after rel_offset."""
        i = bisect_right(self.rel_offsets, rel_offset - 1)
        self._truncate(i)

    def _truncate(self, n: int) -> None:
        if n == len(self.rel_offsets):
            return
        del self.rel_offsets[n:]
        del self.positions[n:]
        self._rewrite()

    def reset(self) -> None:
        self.rel_offsets = array("I")
        self.positions = array("I")
        self._rewrite()

    def _rewrite(self) -> None:
        both = array("I", [0]) * (2 * len(self.rel_offsets))
        both[0::2] = self.rel_offsets
        both[1::2] = self.positions
        if sys.byteorder == "big":
            both.byteswap()
        self._replace_file(both.tobytes())


class TimeIndex(_IndexFile):
    """timestamp -> relative offset; see the module docstring for the exact meaning."""

    __slots__ = ("timestamps", "rel_offsets")

    def __init__(self, path: str):
        super().__init__(path)
        self.timestamps: list[int] = []
        self.rel_offsets: list[int] = []

    def __len__(self) -> int:
        return len(self.timestamps)

    def load(self, max_rel_offset: int) -> None:
        data = self._read_entries(_TIME_ENTRY)
        entries = np.frombuffer(data, dtype=_TIME_DTYPE)
        ts, rel = entries["ts"].tolist(), entries["rel"].tolist()
        if len(ts) > 1 and not (np.all(np.diff(entries["ts"]) > 0)
                                and np.all(np.diff(entries["rel"].astype(np.int64)) > 0)):
            raise IndexCorrupt(f"{self.path}: entries are not increasing")
        if rel and rel[-1] > max_rel_offset:
            raise IndexCorrupt(f"{self.path}: offset beyond the end of its segment")
        self.timestamps, self.rel_offsets = ts, rel

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, rel_offset: int) -> None:
        """Add an entry when it says something new (a larger timestamp)."""
        if timestamp <= self.last_timestamp or (self.rel_offsets and
                                                rel_offset <= self.rel_offsets[-1]):
            return
        self.timestamps.append(timestamp)
        self.rel_offsets.append(rel_offset)
        if self._fd is not None:
            os.write(self._fd, _TIME.pack(timestamp, rel_offset))
            self.dirty = True

    def lookup(self, timestamp: int) -> int:
        """A relative offset before which no batch has max_timestamp >= timestamp (0 if none)."""
        i = bisect_right(self.timestamps, timestamp - 1)   # last entry with ts < timestamp
        return self.rel_offsets[i - 1] if i else 0

    def last_entry(self) -> tuple[int, int]:
        if not self.timestamps:
            return -1, 0
        return self.timestamps[-1], self.rel_offsets[-1]

    def truncate_to_offset(self, rel_offset: int) -> None:
        """Drop entries at or after rel_offset, like the offset index does, so that the last
        time entry never lies beyond the last offset entry."""
        i = bisect_left(self.rel_offsets, rel_offset)
        if i == len(self.rel_offsets):
            return
        del self.timestamps[i:]
        del self.rel_offsets[i:]
        self._rewrite()

    def reset(self) -> None:
        self.timestamps, self.rel_offsets = [], []
        self._rewrite()

    def _rewrite(self) -> None:
        self._replace_file(b"".join(_TIME.pack(t, r)
                                    for t, r in zip(self.timestamps, self.rel_offsets)))
