"""The per-record loops of kernels.py for numba (compiled on first use, cached on disk in
__pycache__): the reference for the ahead-of-time compiled _columns.pyx, and what runs where
that module is not built (or under GREGOR_PURE_PYTHON=1). Only imported then: importing numba
and its start-up cost a fresh process ~0.5 s of CPU.

Why compiled: a v2 record is a handful of varints around the key and value bytes, so any
Python-level loop pays ~0.3 us a record in interpreter overhead, and numpy cannot express the
ragged copies without building per-byte index arrays. A numba loop writes a record of
110 B in ~0.012 us. Kernels run with the GIL released (nogil), so the producer's sender
thread keeps sending while a caller encodes the next batch.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic


@njit(cache=True, nogil=True, inline="always")
def _varint_size(v):
    # zig-zag, as uint64: for |v| >= 2**62 the shifted value does not fit an int64
    z = np.uint64((v << 1) ^ (v >> 63))
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _put_varint(out, p, v):
    z = np.uint64((v << 1) ^ (v >> 63))
    while z >= 0x80:
        out[p] = (z & 0x7F) | 0x80
        z >>= 7
        p += 1
    out[p] = z
    return p + 1


@njit(cache=True, nogil=True, inline="always")
def _span(offsets, valid, i):
    """(start, length) of item i of a column; length -1 for null."""
    if valid[i]:
        return offsets[i], offsets[i + 1] - offsets[i]
    return 0, -1


@intrinsic
def _copy_bytes(typingctx, dst, dst_pos, src, src_pos, n):
    """dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n] as one memcpy (the caller has
    checked the bounds). Numba's slice assignment copies byte by byte."""
    sig = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        d, d_pos, s, s_pos, count = args
        darr = context.make_array(signature.args[0])(context, builder, d)
        sarr = context.make_array(signature.args[2])(context, builder, s)
        cgutils.raw_memcpy(builder, builder.gep(darr.data, [d_pos]),
                           builder.gep(sarr.data, [s_pos]), count, 1)
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _record_body_size(kl, vl, td, j):
    """Bytes of a record after its length varint: attributes, deltas, key, value, header
    count (kl / vl -1 for null)."""
    return (2 + _varint_size(td) + _varint_size(j) + _varint_size(kl) + max(kl, 0)
            + _varint_size(vl) + max(vl, 0))


@njit(cache=True, nogil=True)
def records_size(koffs, kvalid, voffs, vvalid, rows, tdelta):
    """Exact byte size of the records section encode_columns writes for these rows: the
    output is allocated once at its final size (never trimmed afterwards)."""
    total = 0
    for j in range(len(rows)):
        i = rows[j]
        kl = _span(koffs, kvalid, i)[1]
        vl = _span(voffs, vvalid, i)[1]
        body = _record_body_size(kl, vl, tdelta[j], j)
        total += _varint_size(body) + body
    return total


@njit(cache=True, nogil=True)
def encode_columns(koffs, kdata, kvalid, voffs, vdata, vvalid, rows, tdelta, out):
    """Write the records section of headerless records into out (records_size bytes);
    return the bytes written. Record j is row
    rows[j] of the columns (so a selection needs no copy of the columns first); tdelta[j] is
    its timestamp minus the batch's base timestamp; offset deltas are 0, 1, 2, ...

    Two passes: the varints first, noting where each key and value goes, then the bytes.
    Interleaved, each record's copy stalled behind the byte-wise varint stores around it:
    one pass took 80 ns a record of 110 B, two passes 12 (benchmarks/bench_encode_kernel.py)."""
    n = len(rows)
    key_at = np.empty(n, dtype=np.int64)
    value_at = np.empty(n, dtype=np.int64)
    p = 0
    for j in range(n):
        i = rows[j]
        kl = _span(koffs, kvalid, i)[1]
        vl = _span(voffs, vvalid, i)[1]
        td = tdelta[j]
        body = _record_body_size(kl, vl, td, j)
        p = _put_varint(out, p, body)
        out[p] = 0                     # attributes
        p = _put_varint(out, p + 1, td)
        p = _put_varint(out, p, j)
        p = _put_varint(out, p, kl)
        key_at[j] = p
        p = _put_varint(out, p + max(kl, 0), vl)
        value_at[j] = p
        p += max(vl, 0)
        out[p] = 0                     # header count
        p += 1
    for j in range(n):
        i = rows[j]
        ka, kl = _span(koffs, kvalid, i)
        va, vl = _span(voffs, vvalid, i)
        if kl > 0:
            _copy_bytes(out, key_at[j], kdata, ka, kl)
        if vl > 0:
            _copy_bytes(out, value_at[j], vdata, va, vl)
    return p


@njit(cache=True, nogil=True)
def append_rows(src_offsets, src_data, rows, dst_offsets, dst_data, dst_count):
    """Copy items rows[0], rows[1], ... of a column (no nulls) after the first dst_count items
    of another (dst_offsets must have room for len(rows) more, dst_data for their bytes: the
    caller checks); returns the new end of dst_data. The copy gathers scattered rows once,
    while their source is fresh in cache, into rows that later read front to back."""
    p = dst_offsets[dst_count]
    for j in range(len(rows)):
        i = rows[j]
        a = src_offsets[i]
        n = src_offsets[i + 1] - a
        if n > 0:
            _copy_bytes(dst_data, p, src_data, a, n)
            p += n
        dst_offsets[dst_count + j + 1] = p
    return p


@njit(cache=True, nogil=True)
def murmur2_partitions(offsets, data, num_partitions, out):
    """out[i] = Java's default partition of key i = data[offsets[i]:offsets[i + 1]]."""
    m = np.uint64(0x5BD1E995)
    mask = np.uint64(0xFFFFFFFF)
    for i in range(len(out)):
        a = offsets[i]
        length = offsets[i + 1] - a
        h = np.uint64(0x9747B28C ^ length) & mask
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
