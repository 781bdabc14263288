"""Kafka's murmur2 partition choice for many keys at once, with numpy (lists of bytes; Arrow
columns go to the compiled loop of records/kernels.py).

The bulk path (send_batch) would otherwise spend microseconds per key in a Python murmur2
loop. Keys are grouped by length; each group is one matrix of 32-bit words hashed column by
column, so the Python work is per length, not per key. Must agree bit for bit with
partitioners.murmur2 (tested).
"""
from __future__ import annotations

import numpy as np

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


def murmur2_partitions_arrow(keys, num_partitions: int) -> np.ndarray:
    """Java's default partition for each key of a pyarrow binary array without nulls,
    read straight from its buffers (int64 array)."""
    from ...protocol.records.kernels import Column, kernel_args, murmur2_partitions_columns
    col = Column.from_arrow(keys)
    out = np.empty(len(keys), dtype=np.int64)
    murmur2_partitions_columns(*kernel_args(col.offsets, col.data), num_partitions, out)
    return out
