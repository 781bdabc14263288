"""The record walk of validation.py compiled with numba: one pass over a records section.

Why compiled: the Python walk costs ~0.2 us a record (its plain loop), and numpy only helps
when the records share one size (fields.record_ends, uniform.py). This loop walks any batch at
a few ns a record, with the GIL released.

It only *proves*: `walk` returns VALID when the Python walk accepts the bytes, and NOT_PROVED
for anything else (damage, but also varints longer than every Python path accepts and
non-ASCII header keys, whose UTF-8 it leaves to Python). validation.py then runs the Python
walk, which decides and words the error. Importing this module imports numba (~0.25 s) and
loads the compiled code from the on-disk cache (~0.15 s; the first compile ~1 s), so
validation.py loads it lazily, off the event loop (`load_in_background`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

VALID = 0
NOT_PROVED = 1


@njit(cache=True, nogil=True, inline="always")
def _uvarint(arr, p, end, max_bytes):
    """(value, next position) of the unsigned varint at p, or (0, -1) when it runs past end
    or is longer than max_bytes (5 here, so the value fits an int64)."""
    if p < end and arr[p] < 0x80:                     # the common one-byte varint
        return np.int64(arr[p]), p + 1
    result = np.int64(0)
    shift = 0
    for _ in range(max_bytes):
        if p >= end:
            return np.int64(0), -1
        b = np.int64(arr[p])
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += 7
    return np.int64(0), -1


@njit(cache=True, nogil=True, inline="always")
def _skip_varint(arr, p, end, max_bytes):
    for _ in range(max_bytes):
        if p >= end:
            return -1
        b = arr[p]
        p += 1
        if b < 0x80:
            return p
    return -1


@njit(cache=True, nogil=True, inline="always")
def _zigzag(u):
    return (u >> 1) ^ -(u & 1)


@njit(cache=True, nogil=True, inline="always")
def _skip_sized(arr, p, end):
    """Past a nullable length-prefixed field (length varint, then that many bytes), or -1
    when it is malformed or runs past end."""
    u, p = _uvarint(arr, p, end, 5)
    if p < 0:
        return -1
    n = _zigzag(u)
    if n < -1 or n > end - p:
        return -1
    return p + max(n, 0)


@njit(cache=True, nogil=True)
def walk(arr, count, last_offset_delta, strict):
    """VALID if the count records in arr (a uint8 array of the records section) are well
    formed with offset deltas 0..count-1 (strict) or increasing up to last_offset_delta;
    else NOT_PROVED."""
    end = len(arr)
    p = 0
    prev = -1
    for i in range(count):
        u, p = _uvarint(arr, p, end, 5)
        if p < 0:
            return NOT_PROVED
        length = _zigzag(u)
        if length < 0 or length > end - p:
            return NOT_PROVED
        rec_end = p + length
        p = _skip_varint(arr, p + 1, rec_end, 10)     # attributes, timestamp delta (any)
        if p < 0:
            return NOT_PROVED
        u, p = _uvarint(arr, p, rec_end, 5)
        if p < 0:
            return NOT_PROVED
        delta = _zigzag(u)
        if strict:
            if delta != i:
                return NOT_PROVED
        elif delta <= prev or delta > last_offset_delta:
            return NOT_PROVED
        prev = delta
        p = _skip_sized(arr, p, rec_end)               # key
        if p < 0:
            return NOT_PROVED
        p = _skip_sized(arr, p, rec_end)               # value
        if p < 0:
            return NOT_PROVED
        u, p = _uvarint(arr, p, rec_end, 5)            # header count
        if p < 0:
            return NOT_PROVED
        headers = _zigzag(u)
        if headers < 0 or headers > rec_end - p:
            return NOT_PROVED
        for _ in range(headers):
            u, p = _uvarint(arr, p, rec_end, 5)
            if p < 0:
                return NOT_PROVED
            n = _zigzag(u)
            if n < 0 or n > rec_end - p:
                return NOT_PROVED
            for k in range(p, p + n):                  # ASCII keys only; Python checks UTF-8
                if arr[k] >= 0x80:
                    return NOT_PROVED
            p = _skip_sized(arr, p + n, rec_end)       # header value
            if p < 0:
                return NOT_PROVED
        if p != rec_end:
            return NOT_PROVED
    if p != end:
        return NOT_PROVED
    return VALID
