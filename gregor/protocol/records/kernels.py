"""Compiled per-record loops over binary columns: encoding a records section, gathering rows,
hashing keys to partitions (murmur2), for send_batch's Arrow path and the Spark sink.

The loops run compiled: from _columns.pyx when it is built (gregor/compiled.py), else from
kernels_numba.py (numba, compiled on first use and cached). Both release the GIL, so the
producer's sender thread keeps sending while a caller encodes the next batch. Why compiled:
a v2 record is a handful of varints around the key and value bytes; any Python-level loop
pays ~0.3 us a record, and numpy cannot express the ragged copies without per-byte index
arrays. Why ahead of time when built: numba costs a fresh process ~0.5 s of CPU at its first
call (import and start-up), paid by every new Spark Python worker on its first write.

The inputs are Arrow's layout for a binary column: int32 offsets (n + 1 of them; item i is
data[offsets[i]:offsets[i + 1]]), a uint8 data buffer, and a validity mask (False = null).
"""
from __future__ import annotations

import numpy as np

from ...compiled import load

_compiled = load("gregor.protocol.records._columns")


def records_size(koffs, kvalid, voffs, vvalid, rows, tdelta) -> int:
    """Exact byte size of the records section encode_columns writes for these rows: the
    output is allocated once at its final size (never trimmed afterwards)."""
    if _compiled is not None:
        return _compiled.records_size(koffs, _u8(kvalid), voffs, _u8(vvalid), _i64(rows),
                                      _i64(tdelta))
    from .kernels_numba import records_size as numba_records_size
    return numba_records_size(koffs, kvalid, voffs, vvalid, rows, tdelta)


def encode_columns(koffs, kdata, kvalid, voffs, vdata, vvalid, rows, tdelta, out) -> int:
    """Write the records section of headerless records into out (records_size bytes); return
    the bytes written. Record j is row rows[j] of the columns (so a selection needs no copy
    of the columns first); tdelta[j] is its timestamp minus the batch's base timestamp;
    offset deltas are 0, 1, 2, ..."""
    if _compiled is not None:
        return _compiled.encode_columns(koffs, kdata, _u8(kvalid), voffs, vdata, _u8(vvalid),
                                        _i64(rows), _i64(tdelta), out)
    from .kernels_numba import encode_columns as numba_encode_columns
    return numba_encode_columns(koffs, kdata, kvalid, voffs, vdata, vvalid, rows, tdelta, out)


def append_rows(src_offsets, src_data, rows, dst_offsets, dst_data, dst_count) -> int:
    """Copy items rows[0], rows[1], ... of a column (no nulls) after the first dst_count items
    of another (dst_offsets must have room for len(rows) more, dst_data for their bytes: the
    caller checks); returns the new end of dst_data."""
    if _compiled is not None:
        return _compiled.append_rows(src_offsets, src_data, _i64(rows), dst_offsets, dst_data,
                                     dst_count)
    from .kernels_numba import append_rows as numba_append_rows
    return numba_append_rows(src_offsets, src_data, rows, dst_offsets, dst_data, dst_count)


def murmur2_partitions_columns(offsets, data, num_partitions: int, out) -> None:
    """out[i] = Java's default partition of key i = data[offsets[i]:offsets[i + 1]]:
    toPositive(murmur2(key)) % num_partitions."""
    if _compiled is not None:
        _compiled.murmur2_partitions(offsets, data, num_partitions, out)
    else:
        from .kernels_numba import murmur2_partitions as numba_murmur2_partitions
        numba_murmur2_partitions(offsets, data, num_partitions, out)


def _u8(mask: np.ndarray) -> np.ndarray:
    """A bool mask as the uint8 view the compiled loops take (no copy)."""
    return mask.view(np.uint8)


def _i64(a: np.ndarray) -> np.ndarray:
    """int64 and contiguous, as the compiled loops take them (no copy when already so)."""
    return np.ascontiguousarray(a, dtype=np.int64)


class Column:
    """One binary column as the kernels take it: offsets (int32, n + 1), data (uint8), valid
    (bool, n). Built from an Arrow binary array or a list of bytes/None."""

    __slots__ = ("offsets", "data", "valid", "nbytes")

    def __init__(self, offsets, data, valid):
        self.offsets = offsets
        self.data = data
        self.valid = valid
        self.nbytes = int(offsets[-1]) - int(offsets[0])

    @classmethod
    def from_arrow(cls, arr) -> "Column":
        """arr: a pyarrow binary array (any offset/slice; null slots may span bytes)."""
        n = len(arr)
        bufs = arr.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4)
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and \
            bufs[2].size else _EMPTY
        valid = np.asarray(arr.is_valid()) if arr.null_count else _all_valid(n)
        return cls(offsets, data, valid)

    @classmethod
    def from_list(cls, items) -> "Column":
        """items: a list of bytes (or bytes-like) and None."""
        n = len(items)
        offsets = np.zeros(n + 1, dtype=np.int32)
        try:
            lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
            valid = _all_valid(n)
        except TypeError:              # None among them
            valid = np.fromiter((x is not None for x in items), dtype=np.bool_, count=n)
            lengths = np.fromiter((len(x) if x is not None else 0 for x in items),
                                  dtype=np.int64, count=n)
            items = [x if x is not None else b"" for x in items]
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(items), dtype=np.uint8)
        return cls(offsets, data, valid)

    def lengths(self) -> np.ndarray:
        """Each item's length in bytes (int64; nulls count their span, normally 0)."""
        return np.diff(self.offsets).astype(np.int64)

    @classmethod
    def nulls(cls, n: int) -> "Column":
        return cls(np.zeros(n + 1, dtype=np.int32), _EMPTY, np.zeros(n, dtype=np.bool_))


_EMPTY = np.zeros(0, dtype=np.uint8)
_VALID_CACHE: list = [np.ones(0, dtype=np.bool_)]


def _all_valid(n: int) -> np.ndarray:
    """A read-only all-True mask of length n (one shared array, grown as needed)."""
    arr = _VALID_CACHE[0]
    if len(arr) < n:
        arr = np.ones(max(n, 2 * len(arr)), dtype=np.bool_)
        arr.flags.writeable = False
        _VALID_CACHE[0] = arr
    return arr[:n]


def encode_records_columns(keys: Column, values: Column, tdelta: np.ndarray,
                           rows: np.ndarray | None = None, alloc=None):
    """Records section (a uint8 array) for headerless records given as columns: all rows
    in order, or the selected `rows`. alloc(nbytes) may supply the output array (a reused
    scratch buffer, or a batch's own buffer); it is asked for the exact size."""
    if rows is None:
        rows = np.arange(len(values.valid), dtype=np.int64)
    args = kernel_args(keys.offsets, keys.data, keys.valid, values.offsets, values.data,
                       values.valid, rows, tdelta)
    koffs, kdata, kvalid, voffs, vdata, vvalid, rows, tdelta = args
    size = records_size(koffs, kvalid, voffs, vvalid, rows, tdelta)
    out = np.empty(size, dtype=np.uint8) if alloc is None else alloc(size)
    end = encode_columns(*args, out)
    if end != size:     # the two kernels disagree: a bug, never bytes on the wire
        raise RuntimeError(f"records section of {end} bytes, {size} expected")
    return out[:end]


def kernel_args(*arrays):
    """The arrays as read-only, C-contiguous views: numba compiles one version of a kernel
    per combination of array flags, so inputs are made uniform to keep that to one."""
    out = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.flags.writeable:
            a = a.view()
            a.flags.writeable = False
        out.append(a)
    return out
