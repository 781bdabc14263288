"""Locating every record's fields at once, with numpy, for batches of many records.

Only one step is sequential: following the chain of record lengths (a Python loop reading one
varint per record). From the record boundaries, each field's varint is then read for all
records together, byte by byte for the few varints longer than one byte, and the structure is
checked as a whole: every record's fields must fill it exactly. Validation and decoding of
large batches both start here (validation.py, batch.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import CorruptRecordsError
from .parsing import varint_slow

# Below this many records numpy's fixed cost (~40 calls) outweighs what it saves over a plain
# loop (measured crossover: 200-300 records of ~110 bytes).
VECTOR_MIN_RECORDS = 256


class Fields(NamedTuple):
    """Per-record int64 arrays (positions index the records section)."""
    ends: np.ndarray
    timestamp_delta: np.ndarray
    offset_delta: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray          # -1 = null
    value_pos: np.ndarray
    value_len: np.ndarray        # -1 = null
    headers_pos: np.ndarray      # where the header count is
    with_headers: np.ndarray     # indices of records whose header count is not 0


def record_ends(data: bytes, count: int) -> list[int]:
    """End offsets of count records that must tile data exactly (the sequential step)."""
    end = len(data)
    ends = []
    append = ends.append
    p = 0
    try:
        for i in range(count):
            b = data[p]
            if b < 0x80:
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                p += 2
            else:
                b, p = varint_slow(data, p, end)
                b = (b << 1) if b >= 0 else 1     # back to zig-zag form
            if b & 1:
                raise CorruptRecordsError(f"record {i} has a negative length")
            p += b >> 1
            append(p)
    except IndexError:
        raise CorruptRecordsError("batch ends inside a record") from None
    if p != end:
        raise CorruptRecordsError(f"the batch's {count} records do not fill it exactly "
                                  f"({end - p:+d} bytes)")
    return ends


def varints_at(arr: np.ndarray, q: np.ndarray, end: int, max_bytes: int):
    """(zig-zag-decoded values, byte lengths) of the varints at positions q of arr. Byte k is
    read only for the varints still going after k bytes; reads are clamped to the data (a
    position past a record's end is caught by the callers' final checks)."""
    last = end - 1
    b = arr[np.minimum(q, last)]
    u = (b & 0x7F).astype(np.uint64)
    ln = np.ones(len(q), dtype=np.int64)
    more = np.flatnonzero(b >= 0x80)
    k = 1
    while len(more):
        if k == max_bytes:
            raise CorruptRecordsError(f"varint longer than {max_bytes} bytes in a record")
        bk = arr[np.minimum(q[more] + k, last)]
        u[more] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)   # bits past 64 drop
        ln[more] = k + 1
        more = more[bk >= 0x80]
        k += 1
    one = np.uint64(1)
    return ((u >> one) ^ (np.uint64(0) - (u & one))).view(np.int64), ln


def locate_fields(data: bytes, count: int) -> Fields:
    """Fields of count records filling data; raises CorruptRecordsError when they do not
    (headers of the records in with_headers are left to the caller)."""
    end = len(data)
    ends = np.array(record_ends(data, count), dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    q = np.empty(count, dtype=np.int64)
    q[0] = 0
    q[1:] = ends[:-1]
    _, ln = varints_at(arr, q, end, 5)                # record length: checked by the chain
    q += ln + 1                                       # length varint, attributes
    ts_delta, ln = varints_at(arr, q, end, 10)
    q += ln
    offset_delta, ln = varints_at(arr, q, end, 5)
    q += ln
    key_len, ln = varints_at(arr, q, end, 5)
    if bool((key_len < -1).any()):
        raise CorruptRecordsError("a record has a negative key length")
    key_pos = q + ln
    q = key_pos + np.maximum(key_len, 0)
    value_len, ln = varints_at(arr, q, end, 5)
    if bool((value_len < -1).any()):
        raise CorruptRecordsError("a record has a negative value length")
    value_pos = q + ln
    q = value_pos + np.maximum(value_len, 0)
    if not bool((q < ends).all()):
        raise CorruptRecordsError("a record's fields run past its end")
    with_headers = np.flatnonzero(arr[q] != 0)       # header count is not 0
    fits = q + 1 == ends
    fits[with_headers] = True
    if not bool(fits.all()):
        i = int(np.flatnonzero(~fits)[0])
        raise CorruptRecordsError(f"record {i}'s declared length disagrees with its fields")
    return Fields(ends, ts_delta, offset_delta, key_pos, key_len, value_pos, value_len, q,
                  with_headers)
