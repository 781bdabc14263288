"""Kafka's murmur2 partition choice for many keys at once, with numpy.

The bulk path (send_batch) would otherwise spend microseconds per key in a Python murmur2
loop. Keys are grouped by length; each group is one matrix of 32-bit words hashed column by
column, so the Python work is per length, not per key. Must agree bit for bit with
partitioners.murmur2 (tested).
"""
from __future__ import annotations

import numpy as np

_M = np.uint64(0x5BD1E995)
_MASK = np.uint64(0xFFFFFFFF)
_SEED = 0x9747B28C


def _mul(a, b=_M):
    # a, b < 2**32, so the product fits uint64 exactly; keep the low 32 bits like Java's int.
    return (a * b) & _MASK


def murmur2_many(keys: list[bytes]) -> np.ndarray:
    """murmur2 of every key (non-null bytes) as uint32 values in an int64 array."""
    n = len(keys)
    out = np.empty(n, dtype=np.int64)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    for length in np.unique(lengths).tolist():
        idx = np.nonzero(lengths == length)[0]
        group = [keys[i] for i in idx.tolist()] if len(idx) != n else keys
        h = np.full(len(idx), (_SEED ^ length) & 0xFFFFFFFF, dtype=np.uint64)
        if length:
            mat = np.frombuffer(b"".join(group), dtype=np.uint8).reshape(len(idx), length)
            n4 = length & ~3
            if n4:
                words = np.ascontiguousarray(mat[:, :n4]).view("<u4").astype(np.uint64)
                for j in range(words.shape[1]):
                    k = _mul(words[:, j])
                    k ^= k >> np.uint64(24)
                    k = _mul(k)
                    h = _mul(h) ^ k
            rem = length & 3
            if rem == 3:
                h ^= mat[:, n4 + 2].astype(np.uint64) << np.uint64(16)
            if rem >= 2:
                h ^= mat[:, n4 + 1].astype(np.uint64) << np.uint64(8)
            if rem >= 1:
                h ^= mat[:, n4].astype(np.uint64)
                h = _mul(h)
        h ^= h >> np.uint64(13)
        h = _mul(h)
        h ^= h >> np.uint64(15)
        out[idx] = h.astype(np.int64)
    return out


def murmur2_partitions(keys: list[bytes], num_partitions: int) -> np.ndarray:
    """Java's default partition for each non-null key: toPositive(murmur2(key)) % n."""
    return (murmur2_many(keys) & 0x7FFFFFFF) % num_partitions
