"""Locating every record's fields at once, with numpy, for batches of many records.

Only one step is sequential: following the chain of record lengths (record_ends: a Python
loop reading one varint per record, which skips ahead over runs of records of one size). From
the record boundaries, each field's varint is then read for all records together, byte by
byte for the few varints longer than one byte, and the structure is checked as a whole: every
record's fields must fill it exactly. Validation and decoding of
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


def record_ends_loop(data, count: int, start: int = 0, first: int = 0,
                     stop: int | None = None) -> list[int]:
    """End offsets of records first..stop-1 (stop defaults to count), the first starting at
    byte `start`, read one length varint at a time: the plain form of the sequential step.
    After the last of the count records the records must fill data exactly."""
    end = len(data)
    ends = []
    append = ends.append
    p = start
    try:
        for i in range(first, count if stop is None else stop):
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
    if (stop is None or stop >= count) and p != end:
        raise CorruptRecordsError(f"the batch's {count} records do not fill it exactly "
                                  f"({end - p:+d} bytes)")
    return ends


# Speculating on record sizes (record_ends). A guess costs ~10 numpy calls (~15 us); a run
# of records of one size pays for it from a few dozen records on. The first guess checks this
# many records, each guess that holds checks SPECULATE_GROWTH times more, so a size change
# early in a large batch wastes little work.
SPECULATE_FIRST = 256
SPECULATE_GROWTH = 8
# A guess that held for fewer records than this did not pay: the plain loop then reads the
# next `backoff` records before the next guess, the backoff doubling up to SPECULATE_MAX_LOOP
# (batches of mixed sizes then pay a few guesses over the loop's ~180 ns a record: measured
# ~10% more than the loop plus turning its list into an array, on 8,700 records of random
# sizes; the compiled walk in walk_compiled.py is what makes such batches cheap).
SPECULATE_MIN_RUN = 16
SPECULATE_MAX_LOOP = 8192


def _uvarint_bytes(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record_ends(data, count: int) -> np.ndarray:
    """End offsets (int64) of count records that must tile data exactly (the sequential step).

    Accepts and refuses exactly what record_ends_loop does, with the same messages: after each
    record read by the loop, it guesses that the next ones have the same size L (their length
    varints are the same bytes E) and checks the guess for many records at once: the bytes at
    p, p + L, p + 2L, ... must be E. The records up to the first that differs are exactly those
    the loop would have followed (each starts where the one before ends, and reads as L
    bytes long), and the loop goes on from there. Batches of same-size records (the common
    case: fixed-size values, or sizes changing only where the offset delta's varint grows)
    cost a few numpy calls instead of a Python step per record.
    """
    if count <= 0:
        return np.array(record_ends_loop(data, count), dtype=np.int64)
    end = len(data)
    out = np.empty(count, dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    i = p = 0
    window = SPECULATE_FIRST
    backoff = 0
    scalar = data           # what the loop indexes: bytes index twice as fast as memoryviews
    while i < count:
        if backoff >= SPECULATE_MIN_RUN and not isinstance(scalar, bytes):
            scalar = bytes(data)
        ends = record_ends_loop(scalar, count, p, i, min(count, i + 1 + backoff))
        out[i:i + len(ends)] = ends
        i += len(ends)
        if i >= count:
            break
        prev = p if len(ends) == 1 else ends[-2]
        p = ends[-1]
        size = p - prev            # the last record's size, its length varint included
        for k in range(1, min(size, 5) + 1):
            encoded = _uvarint_bytes(2 * (size - k))   # canonical varint of a k-byte prefix
            if len(encoded) == k:
                break
        else:
            # no canonical varint gives this size (the record's was overlong): keep looping
            backoff = min(SPECULATE_MAX_LOOP, 2 * backoff + 1)
            continue
        n = min(count - i, (end - p) // size, window)
        if n <= 0:
            continue
        # a guess costs ~15 us of numpy: first check its first few records in Python (~1 us)
        k = len(encoded)
        if any(scalar[q:q + k] != encoded for q in range(p, p + min(n, 4) * size, size)):
            backoff = min(SPECULATE_MAX_LOOP, 2 * backoff + 1)
            continue
        starts = np.arange(p, p + n * size, size, dtype=np.int64)
        ok = arr[starts] == encoded[0]
        for j in range(1, len(encoded)):
            ok &= arr[starts + j] == encoded[j]
        held = n if bool(ok.all()) else int(ok.argmin())
        if held:
            out[i:i + held] = starts[:held] + size
            i += held
            p += held * size
        if held == n:
            window *= SPECULATE_GROWTH
        else:
            window = SPECULATE_FIRST
        backoff = 0 if held >= SPECULATE_MIN_RUN else min(SPECULATE_MAX_LOOP, 2 * backoff + 1)
    if int(out[-1]) != end:
        # the loop's own final check, for a batch the guesses walked to the last record
        raise CorruptRecordsError(f"the batch's {count} records do not fill it exactly "
                                  f"({end - int(out[-1]):+d} bytes)")
    return out


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


def locate_fields(data: bytes, count: int, ends: np.ndarray | None = None) -> Fields:
    """Fields of count records filling data; raises CorruptRecordsError when they do not
    (headers of the records in with_headers are left to the caller). ends: record_ends'
    result, when the caller has it already."""
    end = len(data)
    if ends is None:
        ends = record_ends(data, count)
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
