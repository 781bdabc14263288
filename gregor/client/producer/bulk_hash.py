"""Kafka's murmur2 partition choice for many keys at once, with numpy.

The bulk path (send_batch) would otherwise spend microseconds per key in a Python murmur2
loop. Keys are grouped by length; each group is one matrix of 32-bit words hashed column by
column, so the Python work is per length, not per key. Must agree bit for bit with
partitioners.murmur2 (tested).
"""
from __future__ import annotations

import numpy as np

from ...compiled import load

# The column loop ahead of time when built (records/_columns.pyx); else numba's, below.
_compiled = load("gregor.protocol.records._columns")

# uint32 arithmetic wraps modulo 2**32 exactly like Java's int multiply, so no masking and no
# widening to 64 bits is needed; each step works in place on one array.
_M = np.uint32(0x5BD1E995)
_SEED = 0x9747B28C


def murmur2_many(keys: list[bytes], lengths: np.ndarray | None = None) -> np.ndarray:
    """murmur2 of every key (non-null bytes) as uint32 values in an int64 array. `lengths`
    (the keys' lengths, int64) may be passed when the caller has them already."""
    n = len(keys)
    out = np.empty(n, dtype=np.int64)
    if lengths is None:
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    if n and lengths.min() == lengths.max():
        # The common case: every key has the same length (no sort for np.unique).
        groups = [int(lengths[0])]
    else:
        groups = np.unique(lengths).tolist()
    for length in groups:
        idx = np.nonzero(lengths == length)[0] if len(groups) > 1 else np.arange(n)
        group = [keys[i] for i in idx.tolist()] if len(idx) != n else keys
        h = np.full(len(idx), (_SEED ^ length) & 0xFFFFFFFF, dtype=np.uint32)
        if length:
            mat = np.frombuffer(b"".join(group), dtype=np.uint8).reshape(len(idx), length)
            n4 = length & ~3
            if n4:
                # One contiguous row per 4-byte word position, so each step reads memory
                # sequentially.
                words = np.ascontiguousarray(mat[:, :n4]).view("<u4").T.copy()
                k = np.empty_like(h)
                for j in range(words.shape[0]):
                    np.multiply(words[j], _M, out=k)
                    k ^= k >> 24
                    k *= _M
                    h *= _M
                    h ^= k
            rem = length & 3
            if rem == 3:
                h ^= mat[:, n4 + 2].astype(np.uint32) << 16
            if rem >= 2:
                h ^= mat[:, n4 + 1].astype(np.uint32) << 8
            if rem >= 1:
                h ^= mat[:, n4]
                h *= _M
        h ^= h >> 13
        h *= _M
        h ^= h >> 15
        out[idx] = h
    return out


def murmur2_partitions(keys: list[bytes], num_partitions: int,
                       lengths: np.ndarray | None = None) -> np.ndarray:
    """Java's default partition for each non-null key: toPositive(murmur2(key)) % n."""
    return (murmur2_many(keys, lengths) & 0x7FFFFFFF) % num_partitions


def _murmur2_columns(offsets, data, num_partitions, out):
    """out[i] = Java's default partition of key i = data[offsets[i]:offsets[i + 1]]."""
    if _compiled is not None:
        _compiled.murmur2_partitions(offsets, data, num_partitions, out)
        return out
    return _numba_murmur2_columns()(offsets, data, num_partitions, out)


_numba_kernel = []


def _numba_murmur2_columns():
    """The numba loop, compiled (or loaded from its cache) on first use: numba is imported
    only where the compiled module is missing."""
    if not _numba_kernel:
        from numba import njit
        _numba_kernel.append(njit(cache=True, nogil=True)(_murmur2_loop))
    return _numba_kernel[0]


def _murmur2_loop(offsets, data, num_partitions, out):
    """out[i] = Java's default partition of key i = data[offsets[i]:offsets[i + 1]]."""
    m = np.uint64(0x5BD1E995)
    mask = np.uint64(0xFFFFFFFF)
    for i in range(len(out)):
        a = offsets[i]
        length = offsets[i + 1] - a
        h = np.uint64(_SEED ^ length) & mask
        n4 = length & ~3
        for j in range(a, a + n4, 4):
            k = (np.uint64(data[j]) | (np.uint64(data[j + 1]) << np.uint64(8))
                 | (np.uint64(data[j + 2]) << np.uint64(16))
                 | (np.uint64(data[j + 3]) << np.uint64(24)))
            k = (k * m) & mask
            k ^= k >> np.uint64(24)
            k = (k * m) & mask
            h = ((h * m) & mask) ^ k
        rem = length & 3
        t = a + n4
        if rem == 3:
            h ^= np.uint64(data[t + 2]) << np.uint64(16)
        if rem >= 2:
            h ^= np.uint64(data[t + 1]) << np.uint64(8)
        if rem >= 1:
            h ^= np.uint64(data[t])
            h = (h * m) & mask
        h ^= h >> np.uint64(13)
        h = (h * m) & mask
        h ^= h >> np.uint64(15)
        out[i] = np.int64(h & np.uint64(0x7FFFFFFF)) % num_partitions
    return out


def murmur2_partitions_arrow(keys, num_partitions: int) -> np.ndarray:
    """Java's default partition for each key of a pyarrow binary array without nulls,
    read straight from its buffers (int64 array)."""
    from ...protocol.records.kernels import Column, kernel_args
    col = Column.from_arrow(keys)
    return _murmur2_columns(*kernel_args(col.offsets, col.data), num_partitions,
                            np.empty(len(keys), dtype=np.int64))
