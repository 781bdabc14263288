"""A numpy decoder for the common v2 batch: many records, no headers, small varints.

Only the record lengths need a sequential pass (each record starts where the previous one
ends); every other field (timestamp delta, offset delta, key and value lengths) is then read for
all records at once with numpy. decode_columns slices keys and values out as bytes; bulk
readers take the field positions (record_fields) and build Arrow arrays from them instead.
Batches this decoder does not cover (headers, varints longer than 3 bytes, anything irregular)
return None and go through the per-record loop in columns.py, which also reports corruption.
"""
from __future__ import annotations

import numpy as np

# Below this many records numpy's per-call set-up costs more than the loop it replaces.
MIN_RECORDS = 32


def _varints(arr: np.ndarray, pos: np.ndarray):
    """Zig-zag varints of at most 3 bytes starting at each pos -> (values, sizes), or None."""
    b0 = arr[pos].astype(np.int64)
    one = b0 < 0x80
    if one.all():  # the usual case for deltas and short keys: skip the wider decoding
        return (b0 >> 1) ^ -(b0 & 1), np.ones(len(b0), np.int64)
    b1 = arr[pos + 1].astype(np.int64)
    b2 = arr[pos + 2].astype(np.int64)
    two = ~one & (b1 < 0x80)
    three = ~one & ~two & (b2 < 0x80)
    if not (one | two | three).all():
        return None
    raw = np.where(one, b0, np.where(two, (b0 & 0x7F) | (b1 << 7),
                                     (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)))
    sizes = np.where(one, 1, np.where(two, 2, 3))
    return (raw >> 1) ^ -(raw & 1), sizes


def _fields(arr: np.ndarray, start: np.ndarray, lengths: np.ndarray, end: int):
    """Vectorised field positions of every record, or None when one is irregular. arr has three
    spare zero bytes so reading a varint's possible 2nd/3rd byte never runs off the end."""
    p = start + 1  # skip the attributes byte
    r = _varints(arr, p)
    if r is None:
        return None
    ts_delta, size = r
    p = p + size
    r = _varints(arr, p)
    if r is None:
        return None
    off_delta, size = r
    p = p + size
    r = _varints(arr, p)
    if r is None:
        return None
    klen, size = r
    kstart = p + size
    p = kstart + np.maximum(klen, 0)
    if (p >= end).any() or (klen < -1).any():
        return None
    r = _varints(arr, p)
    if r is None:
        return None
    vlen, size = r
    vstart = p + size
    p = vstart + np.maximum(vlen, 0)
    if (p >= end).any() or (vlen < -1).any() or arr[p].any():  # a header count other than 0
        return None
    if ((p + 1 - start) != lengths).any():
        return None  # not what the lengths say: let the careful loop report it
    return ts_delta, off_delta, kstart, klen, vstart, vlen


# The scan steps over CHUNK records at a time in Python; when those all had the same size (as
# with fixed-width keys and values) numpy checks how far that size continues, so long runs of
# equal records cost a few array operations instead of a loop turn each. 64 keeps the test's
# cost (one comparison per chunk) negligible for records of varying size.
CHUNK = 64


def _record_heads(data: bytes, count: int) -> list | None:
    """Where each of the `count` records of a batch body starts (its length varint), or None
    when a record is 8 KiB or more or the records do not end exactly at the body's end.

    Steps over a record by 1 + raw >> 1 (or 2 + ...), its true size only when the zig-zag
    value is even (a length >= 0); record_fields re-reads every length with numpy and declines
    the fetch if one is negative, so a wrong step never goes unnoticed."""
    vpos: list[int] = []
    app = vpos.append
    pos, end, k = 0, len(data), 0
    arr = None
    try:
        while k < count:
            chunk_start = pos
            n = min(CHUNK, count - k)
            step = 0
            for _ in range(n):
                app(pos)
                b = data[pos]
                if b < 0x80:
                    step = 1 + (b >> 1)
                else:
                    c = data[pos + 1]
                    if c >= 0x80:
                        return None  # a record of 8 KiB or more: the loop's case
                    step = 2 + (((b & 0x7F) | (c << 7)) >> 1)
                pos += step
            k += n
            if n == CHUNK and pos - chunk_start == CHUNK * step and k < count and step > 2:
                # Maybe a run of equal records: records whose length varint has the same
                # bytes as the last one's have its size, so each starts one step further.
                if arr is None:
                    arr = np.frombuffer(data, np.uint8)
                m = min(count - k, (end - pos) // step)
                cand = pos + step * np.arange(m, dtype=np.int64)
                ok = arr[cand] == data[pos - step]
                if data[pos - step] >= 0x80:
                    ok &= arr[cand + 1] == data[pos - step + 1]
                run = m if ok.all() else int(np.argmin(ok))
                vpos.extend(cand[:run].tolist())
                pos += run * step
                k += run
    except IndexError:
        return None
    return vpos if pos == end else None


def record_fields(bodies: list[bytes], counts: list[int]):
    """Field positions of every record of several batch bodies at once: (data, offset_deltas,
    timestamp_deltas, kstart, klen, vstart, vlen) as numpy arrays over data = b"".join(bodies)
    (a length of -1 is a null key/value), or None when some batch is not one this decoder
    handles. One numpy pass covers every batch of a fetch, so its set-up cost is paid once per
    fetch rather than once per (small) batch."""
    total = sum(counts)
    if total < MIN_RECORDS:
        return None
    # The only sequential pass: where each record's length varint sits. The loop adds
    # 1 + raw >> 1 (or 2 + ...) to step over a record, which is its true size only when the
    # zig-zag value is even (a length >= 0); numpy re-reads every length below and declines the
    # fetch if one is negative, so a wrong step can never go unnoticed.
    heads = []
    base = 0
    for data, count in zip(bodies, counts):
        vpos = _record_heads(data, count)
        if vpos is None:
            return None
        heads.append(np.array(vpos, np.int64) + base)
        base += len(data)
    data = b"".join(bodies)
    arr = np.frombuffer(data + b"\0\0\0", np.uint8)
    heads = np.concatenate(heads)
    try:
        r = _varints(arr, heads)
        if r is None:
            return None
        lengths, sizes = r
        if (lengths < 0).any():
            return None
        fields = _fields(arr, heads + sizes, lengths, len(data))
    except IndexError:  # a length or varint pointing past the batch: not ours to judge
        return None
    if fields is None:
        return None
    ts_delta, off_delta, kstart, klen, vstart, vlen = fields
    return data, off_delta, ts_delta, kstart, klen, vstart, vlen


def decode_columns(bodies: list[bytes], counts: list[int]):
    """(offset_deltas, timestamp_deltas, keys, values) over all records of several batch
    bodies, keys and values as lists of bytes (None for null), or None when some batch is not
    one this decoder handles (see record_fields)."""
    got = record_fields(bodies, counts)
    if got is None:
        return None
    data, off_delta, ts_delta, kstart, klen, vstart, vlen = got
    ks, kl = kstart.tolist(), klen.tolist()
    vs, vl = vstart.tolist(), vlen.tolist()
    if min(kl) < 0:
        keys = [None if n < 0 else data[s:s + n] for s, n in zip(ks, kl)]
    else:
        keys = [data[s:s + n] for s, n in zip(ks, kl)]
    if min(vl) < 0:
        values = [None if n < 0 else data[s:s + n] for s, n in zip(vs, vl)]
    else:
        values = [data[s:s + n] for s, n in zip(vs, vl)]
    return off_delta, ts_delta, keys, values
