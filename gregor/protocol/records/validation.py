"""Validating v2 batches without building Record objects: what the broker runs on every
produced batch, and log recovery on every stored one.

Batches of fields.VECTOR_MIN_RECORDS records or more are checked with numpy, all records at
once, once the record boundaries are known (fields.py); records with headers (rare) are then
walked one by one. Produced batches whose records share one layout are first offered to
uniform.py, which can only prove them valid (a few column checks per run of same-size
records); anything it cannot prove goes through the general walk. Once loaded (in the
background, at the first large batch), a compiled walk (walk_compiled.py) checks batches of
any shape in one pass first; it too only proves validity, and the Python walks decide the
rest. Small batches use a plain loop, which is cheaper than numpy's set-up. Both
accept and refuse the same bytes (a differential test checks it).
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from ..compression import DEFAULT_MAX_DECOMPRESSED, NONE
from .errors import CorruptRecordsError, InvalidRecordsError
from .fields import VECTOR_MIN_RECORDS, locate_fields, record_ends
from .header import CONTROL_BIT, HEADER_SIZE, BatchHeader
from .parsing import complete_batch_at, decode_headers, records_section, varint_slow
from .uniform import plain_runs_valid

log = logging.getLogger("gregor.protocol.records.validation")


# The compiled walk (walk_compiled.py) beats the Python walks from a handful of records on
# (10 records: ~0.9 us against ~6 us for the plain loop; one call costs ~0.7 us).
COMPILED_MIN_RECORDS = 4
_compiled_walk = None            # walk_compiled.walk once loaded
_compiled_state = "not loaded"   # -> "loading" -> "loaded" | "unavailable"
_compiled_lock = threading.Lock()


def load_compiled_walk(*, background: bool = False) -> bool:
    """Load the compiled walk (once per process); True when it is in use. The first large
    batch asks for it in the background: importing numba and loading the cached code takes
    ~0.4 s, which must not stall the broker's event loop; batches walk in Python meanwhile.
    Without numba (or if it fails) the Python walks stay in use."""
    global _compiled_state
    with _compiled_lock:
        if _compiled_state != "not loaded":
            return _compiled_walk is not None
        _compiled_state = "loading"
    if background:
        threading.Thread(target=_load_compiled_walk, name="gregor-compiled-walk",
                         daemon=True).start()
        return False
    _load_compiled_walk()
    return _compiled_walk is not None


def _load_compiled_walk() -> None:
    global _compiled_walk, _compiled_state
    try:
        from .walk_compiled import walk
        walk(np.zeros(0, dtype=np.uint8), 0, -1, True)      # load or compile it now
        _compiled_walk, _compiled_state = walk, "loaded"
    except Exception as e:       # no numba, or it cannot compile here
        _compiled_state = "unavailable"
        log.warning("the compiled record walk is unavailable (%s); records are checked by "
                    "the Python walk", e)


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
    if h.compression == NONE and count >= VECTOR_MIN_RECORDS:
        # the vector walk reads the records in place (numpy views them; no 1 MiB copy)
        data = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    elif h.compression != NONE:
        # only read here: decompressed into this thread's reused buffer where possible
        data = records_section(buf, pos, h, max_decompressed, transient=True)
    else:
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
    walk = _compiled_walk
    if walk is not None and count >= COMPILED_MIN_RECORDS:
        if walk(np.frombuffer(data, dtype=np.uint8), count, last_offset_delta,
                strict_offsets) == 0:     # walk_compiled.VALID
            return              # proved valid; otherwise the Python walk decides below
    elif walk is None and count >= VECTOR_MIN_RECORDS:
        load_compiled_walk(background=True)
    if count >= VECTOR_MIN_RECORDS:
        _walk_records_vector(data, count, last_offset_delta, strict_offsets)
    else:
        _walk_records_loop(data, count, last_offset_delta, strict_offsets=strict_offsets)


def _walk_records_vector(data: bytes, count: int, last_offset_delta: int,
                         strict_offsets: bool) -> None:
    ends = record_ends(data, count)
    if strict_offsets and plain_runs_valid(data, ends):
        return              # proved valid run by run (uniform.py); else the general walk
    _walk_fields(data, count, last_offset_delta, strict_offsets, ends)


def _walk_fields(data: bytes, count: int, last_offset_delta: int, strict_offsets: bool,
                 ends) -> None:
    """The general vector walk: every record's fields located with numpy, then checked."""
    f = locate_fields(data, count, ends)
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
