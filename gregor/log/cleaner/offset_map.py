"""The cleaner's key -> last offset map, bounded by log.cleaner.dedupe.buffer.size.

Keys are hashed to a 16-byte digest (BLAKE2b), so an entry costs the same whatever the key's
size: 24 bytes (two uint64 halves of the digest and an int64 offset) in numpy arrays, plus as
much again while a merge sorts them. Capacity = buffer size // 48, of which at most 90% is
filled (Kafka's load factor), so memory never grows past the buffer however many keys a
partition has; a pass whose keys do not fit stops at a batch boundary and the rest of the
dirty section is cleaned by the next round.

Lookups match the whole digest. Two keys whose first 8 bytes agree but whose digests differ
(odds 2**-64 per pair) are both reported as absent, which only keeps records: the map may
fail to remove a record, never remove one it should keep.
"""
from __future__ import annotations

import hashlib

import numpy as np

ENTRY_BYTES = 48            # 24 stored + 24 of sort workspace during a merge
LOAD_FACTOR = 0.9
DIGEST_BYTES = 16


def digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=DIGEST_BYTES).digest()


def digests_of(keys) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) uint64 arrays of the keys' digests."""
    if not keys:
        e = np.empty(0, dtype=np.uint64)
        return e, e
    b2 = hashlib.blake2b          # inlined: a helper call per key costs as much as the hash
    raw = np.frombuffer(b"".join([b2(k, digest_size=DIGEST_BYTES).digest() for k in keys]),
                        dtype=">u8").reshape(-1, 2)
    return raw[:, 0].astype(np.uint64), raw[:, 1].astype(np.uint64)


class OffsetMap:
    def __init__(self, buffer_bytes: int):
        self.capacity = max(1, int(buffer_bytes // ENTRY_BYTES * LOAD_FACTOR))
        self.clear()

    def clear(self) -> None:
        self._hi = np.empty(0, dtype=np.uint64)
        self._lo = np.empty(0, dtype=np.uint64)
        self._off = np.empty(0, dtype=np.int64)
        self._unique = np.empty(0, dtype=bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_n = 0
        self.latest_offset = -1          # the last offset put (the map covers up to it)
        self.full = False

    def __len__(self) -> int:
        self._merge()
        return len(self._off)

    def try_put(self, hi: np.ndarray, lo: np.ndarray, offsets: np.ndarray,
                last_offset: int) -> bool:
        """Add one batch's keys (offsets ascending, after everything put before) and note
        last_offset as covered; False (nothing added, map marked full) when they might not
        fit."""
        n = len(offsets)
        if len(self._off) + self._pending_n + n > self.capacity:
            self._merge()
            room = self.capacity - len(self._off)
            # nearly full: stop here rather than merge again for every batch
            if n > room or room < self.capacity // 10:
                self.full = True
                return False
        if n:
            self._pending.append((hi, lo, offsets))
            self._pending_n += n
        self.latest_offset = last_offset
        return True

    def _merge(self) -> None:
        if not self._pending:
            return
        hi = np.concatenate([self._hi] + [p[0] for p in self._pending])
        lo = np.concatenate([self._lo] + [p[1] for p in self._pending])
        off = np.concatenate([self._off] + [p[2] for p in self._pending])
        self._pending, self._pending_n = [], 0
        order = np.lexsort((off, lo, hi))          # by hi, then lo, then offset
        hi, lo, off = hi[order], lo[order], off[order]
        last = np.ones(len(hi), dtype=bool)        # keep the last (largest offset) per digest
        last[:-1] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
        self._hi, self._lo, self._off = hi[last], lo[last], off[last]
        h = self._hi
        self._unique = np.ones(len(h), dtype=bool)
        self._unique[1:] = h[1:] != h[:-1]
        self._unique[:-1] &= h[:-1] != h[1:]

    def lookup(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """Latest offset per digest, -1 where absent."""
        self._merge()
        out = np.full(len(hi), -1, dtype=np.int64)
        if not len(self._hi) or not len(hi):
            return out
        i = np.searchsorted(self._hi, hi)
        inside = i < len(self._hi)
        j = np.where(inside, i, 0)
        # unique hi only: a shared first half is left absent (see module doc)
        hit = inside & (self._hi[j] == hi) & (self._lo[j] == lo) & self._unique[j]
        out[hit] = self._off[j[hit]]
        return out

    def get(self, key: bytes) -> int:
        hi, lo = digests_of([key])
        return int(self.lookup(hi, lo)[0])
