"""Validating v2 batches without building Record objects: what the broker runs on every
produced batch, and log recovery on every stored one.

Batches of fields.VECTOR_MIN_RECORDS records or more are checked with numpy, all records at
once, once the record boundaries are known (fields.py); records with headers (rare) are then
walked one by one. Small batches use a plain loop, which is cheaper than numpy's set-up. Both
accept and refuse the same bytes (a differential test checks it).
"""
from __future__ import annotations

import numpy as np

from ..compression import DEFAULT_MAX_DECOMPRESSED
from .errors import CorruptRecordsError, InvalidRecordsError
from .fields import VECTOR_MIN_RECORDS, locate_fields
from .header import CONTROL_BIT, BatchHeader
from .parsing import complete_batch_at, decode_headers, records_section, varint_slow


def validate_batch(buf, pos: int = 0, *, from_client: bool = False,
                   max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> BatchHeader:
    """Check the v2 batch at pos: complete, CRC, header fields, and every record's structure.

    from_client=True adds Kafka's rules for batches in produce requests: no control batches,
    a base sequence when a producer id is set, offset deltas exactly 0..count-1. Log recovery
    leaves it False (its batches include control batches the broker wrote itself).
    """
    h = complete_batch_at(buf, pos)
    if h.compression > 4:
        raise CorruptRecordsError(f"unknown compression codec {h.compression} in batch "
                                  f"attributes")
    count = h.records_count
    if count <= 0:
        raise InvalidRecordsError(f"invalid record count {count} in batch")
    # Producers write deltas 0..count-1; compaction may leave gaps, never fewer deltas.
    if h.last_offset_delta != count - 1 and (from_client or h.last_offset_delta < count - 1):
        raise InvalidRecordsError(f"inconsistent batch: last offset delta "
                                  f"{h.last_offset_delta} with {count} records")
    if from_client:
        if h.attributes & CONTROL_BIT:
            raise InvalidRecordsError("clients may not write control records")
        if h.producer_id >= 0 and h.base_sequence < 0:
            raise InvalidRecordsError(f"batch from producer {h.producer_id} has no sequence "
                                      f"number (base sequence {h.base_sequence})")
    data = records_section(buf, pos, h, max_decompressed)
    walk_records(data, count, h.last_offset_delta, strict_offsets=from_client)
    return h


def walk_records(data: bytes, count: int, last_offset_delta: int, *,
                 strict_offsets: bool = True) -> None:
    """Check the structure of count records in data without building them. Offset deltas
    must increase (strictly: be exactly 0, 1, 2, ...) and stay within last_offset_delta."""
    end = len(data)
    if count > end // 7:   # smallest record: length + attributes + 5 one-byte varints
        raise CorruptRecordsError(f"{count} records cannot fit in {end} bytes")
    if count >= VECTOR_MIN_RECORDS:
        _walk_records_vector(data, count, last_offset_delta, strict_offsets)
    else:
        _walk_records_loop(data, count, last_offset_delta, strict_offsets=strict_offsets)


def _walk_records_vector(data: bytes, count: int, last_offset_delta: int,
                         strict_offsets: bool) -> None:
    f = locate_fields(data, count)
    deltas = f.offset_delta
    if strict_offsets:
        bad = np.flatnonzero(deltas != np.arange(count))
        if len(bad):
            i = int(bad[0])
            raise InvalidRecordsError(f"record {i} has offset delta {int(deltas[i])}; "
                                      f"expected {i}")
    elif int(deltas[0]) < 0 or int(deltas[-1]) > last_offset_delta or \
            bool((deltas[1:] <= deltas[:-1]).any()):
        raise InvalidRecordsError(f"offset deltas must increase from 0 up to "
                                  f"{last_offset_delta}")
    for i in f.with_headers.tolist():
        _, p = decode_headers(data, int(f.headers_pos[i]), int(f.ends[i]))
        if p != int(f.ends[i]):
            raise CorruptRecordsError(f"record {i}'s declared length disagrees with its "
                                      f"headers")


def _walk_records_loop(data: bytes, count: int, last_offset_delta: int, *,
                       strict_offsets: bool = True) -> None:
    """walk_records for small batches: one plain loop over the records.

    Varints are kept in zig-zag form (even = non-negative n << 1, 1 = -1, other odd values =
    invalid negatives), which saves decoding them; short varints are read inline.
    """
    end = len(data)
    p = 0
    prev = -1
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
            rec_end = p + (b >> 1)
            if rec_end > end:
                raise CorruptRecordsError(f"record {i} length {b >> 1} does not fit the batch")
            # attributes, then timestamp delta (any value: only its length matters)
            if data[p + 1] < 0x80:
                p += 2
            elif data[p + 2] < 0x80:
                p += 3
            elif data[p + 3] < 0x80:
                p += 4
            else:
                _, p = varint_slow(data, p + 1, rec_end)
            b = data[p]
            if b < 0x80:
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                p += 2
            else:
                b, p = varint_slow(data, p, rec_end)
                b = (b << 1) if b >= 0 else 1
            if strict_offsets:
                if b != i << 1:
                    raise InvalidRecordsError(f"record {i} has offset delta "
                                              f"{(b >> 1) ^ -(b & 1)}; expected {i}")
            else:
                od = (b >> 1) ^ -(b & 1)
                if od <= prev or od > last_offset_delta:
                    raise InvalidRecordsError(f"record {i} has offset delta {od}; deltas must "
                                              f"increase up to {last_offset_delta}")
                prev = od
            # key length (zig-zag: 1 = null, odd > 1 = invalid negative)
            b = data[p]
            if b < 0x80:
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                p += 2
            else:
                b, p = varint_slow(data, p, rec_end)
                b = (b << 1) if b >= 0 else (1 if b == -1 else 3)
            if b & 1:
                if b != 1:
                    raise CorruptRecordsError(f"record {i} has a negative key length")
            else:
                p += b >> 1
            b = data[p]
            if b < 0x80:
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                p += 2
            else:
                b, p = varint_slow(data, p, rec_end)
                b = (b << 1) if b >= 0 else (1 if b == -1 else 3)
            if b & 1:
                if b != 1:
                    raise CorruptRecordsError(f"record {i} has a negative value length")
            else:
                p += b >> 1
            if p + 1 == rec_end and data[p] == 0:
                p = rec_end
                continue
            if p >= rec_end:
                raise CorruptRecordsError(f"record {i}: fields run past its end")
            _, p = decode_headers(data, p, rec_end)
            if p != rec_end:
                raise CorruptRecordsError(f"record {i}'s declared length disagrees with its "
                                          f"fields ({p - rec_end:+d} bytes)")
    except IndexError:
        raise CorruptRecordsError("batch ends inside a record") from None
    if p != end:
        raise CorruptRecordsError(f"{end - p} bytes after the batch's {count} records")
