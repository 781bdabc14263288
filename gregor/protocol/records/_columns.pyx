# cython: boundscheck=False, wraparound=False, cdivision=True
"""The per-record loops over Arrow binary columns, compiled ahead of time. Optional
(gregor/compiled.py): kernels_numba.py holds the same loops for numba, which runs them where
this module is not built (and under GREGOR_PURE_PYTHON=1); tests compare the two.

Why both: numba compiles on first use and caches the code, but a process still pays ~0.5 s
of CPU the first time it calls any numba function (importing numba, then its start-up),
which every fresh Spark Python worker and every new producer paid on its first send_batch.
These loops are simple enough to hold in C.

Inputs are Arrow's binary layout: int32 offsets (n + 1), uint8 data, and a validity mask as
uint8 (0 = null). The callers check sizes and bounds (kernels.py), as for the numba loops.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef inline int _varint_size(int64_t v) noexcept nogil:
    # zig-zag, as uint64: for |v| >= 2**62 the shifted value does not fit an int64
    cdef uint64_t z = (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)
    cdef int n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


cdef inline int64_t _put_varint(uint8_t* out, int64_t p, int64_t v) noexcept nogil:
    cdef uint64_t z = (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)
    while z >= 0x80:
        out[p] = <uint8_t>((z & 0x7F) | 0x80)
        z >>= 7
        p += 1
    out[p] = <uint8_t>z
    return p + 1


cdef inline int64_t _body_size(int64_t kl, int64_t vl, int64_t td, int64_t j) noexcept nogil:
    """Bytes of a record after its length varint (kl / vl -1 for null)."""
    return (2 + _varint_size(td) + _varint_size(j) + _varint_size(kl) + (kl if kl > 0 else 0)
            + _varint_size(vl) + (vl if vl > 0 else 0))


def records_size(const int32_t[:] koffs, const uint8_t[:] kvalid, const int32_t[:] voffs,
                 const uint8_t[:] vvalid, const int64_t[:] rows, const int64_t[:] tdelta):
    """Exact byte size of the records section encode_columns writes for these rows."""
    cdef Py_ssize_t j, n = rows.shape[0]
    cdef int64_t i, kl, vl, body, total = 0
    with nogil:
        for j in range(n):
            i = rows[j]
            kl = koffs[i + 1] - koffs[i] if kvalid[i] else -1
            vl = voffs[i + 1] - voffs[i] if vvalid[i] else -1
            body = _body_size(kl, vl, tdelta[j], j)
            total += _varint_size(body) + body
    return total


cdef enum:
    BLOCK = 256          # records per two-pass block (positions kept on the stack)


def encode_columns(const int32_t[:] koffs, const uint8_t[:] kdata, const uint8_t[:] kvalid,
                   const int32_t[:] voffs, const uint8_t[:] vdata, const uint8_t[:] vvalid,
                   const int64_t[:] rows, const int64_t[:] tdelta, uint8_t[:] out):
    """Write the records section of headerless records into out (records_size bytes); return
    the bytes written. Record j is row rows[j]; offset deltas are 0, 1, 2, ...

    In blocks of BLOCK records, two passes each: the varints first, noting where each key
    and value goes, then the copies. Rows picked out of a large column (one partition's
    keys) are scattered in memory; copies that do not wait on varint stores between them
    overlap their cache misses (one pass measured 81 ns a record there, two 46 or less)."""
    cdef Py_ssize_t j, lo, hi, n = rows.shape[0]
    cdef int64_t i, kl, vl, td, body, p = 0
    cdef int64_t key_at[BLOCK]
    cdef int64_t value_at[BLOCK]
    cdef uint8_t* o = &out[0] if out.shape[0] else NULL
    cdef const uint8_t* kd = &kdata[0] if kdata.shape[0] else NULL
    cdef const uint8_t* vd = &vdata[0] if vdata.shape[0] else NULL
    with nogil:
        lo = 0
        while lo < n:
            hi = lo + BLOCK if lo + BLOCK < n else n
            for j in range(lo, hi):
                i = rows[j]
                kl = koffs[i + 1] - koffs[i] if kvalid[i] else -1
                vl = voffs[i + 1] - voffs[i] if vvalid[i] else -1
                td = tdelta[j]
                body = _body_size(kl, vl, td, j)
                p = _put_varint(o, p, body)
                o[p] = 0                               # attributes
                p = _put_varint(o, p + 1, td)
                p = _put_varint(o, p, j)
                p = _put_varint(o, p, kl)
                key_at[j - lo] = p
                p = _put_varint(o, p + (kl if kl > 0 else 0), vl)
                value_at[j - lo] = p
                p += vl if vl > 0 else 0
                o[p] = 0                               # header count
                p += 1
            for j in range(lo, hi):
                i = rows[j]
                if kvalid[i] and koffs[i + 1] > koffs[i]:
                    memcpy(o + key_at[j - lo], kd + koffs[i], koffs[i + 1] - koffs[i])
                if vvalid[i] and voffs[i + 1] > voffs[i]:
                    memcpy(o + value_at[j - lo], vd + voffs[i], voffs[i + 1] - voffs[i])
            lo = hi
    return p


def append_rows(const int32_t[:] src_offsets, const uint8_t[:] src_data, const int64_t[:] rows,
                int32_t[:] dst_offsets, uint8_t[:] dst_data, int64_t dst_count):
    """Copy items rows[0], rows[1], ... of a column (no nulls) after the first dst_count
    items of another (the caller has made room); returns the new end of dst_data."""
    cdef Py_ssize_t j, n = rows.shape[0]
    cdef int64_t i, a, length, p = dst_offsets[dst_count]
    cdef uint8_t* d = &dst_data[0] if dst_data.shape[0] else NULL
    cdef const uint8_t* s = &src_data[0] if src_data.shape[0] else NULL
    with nogil:
        for j in range(n):
            i = rows[j]
            a = src_offsets[i]
            length = src_offsets[i + 1] - a
            if length > 0:
                memcpy(d + p, s + a, length)
                p += length
            dst_offsets[dst_count + j + 1] = <int32_t>p
    return p


def murmur2_partitions(const int32_t[:] offsets, const uint8_t[:] data, int64_t num_partitions,
                       int64_t[:] out):
    """out[i] = Java's default partition of key i = data[offsets[i]:offsets[i + 1]]:
    toPositive(murmur2(key)) % num_partitions."""
    cdef Py_ssize_t i, n = out.shape[0]
    cdef int64_t a, length, t, j, n4, rem
    cdef uint32_t m = 0x5BD1E995, h, k
    cdef const uint8_t* d = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(n):
            a = offsets[i]
            length = offsets[i + 1] - a
            h = <uint32_t>0x9747B28C ^ <uint32_t>length
            n4 = length & ~3
            j = a
            while j < a + n4:
                k = (<uint32_t>d[j] | (<uint32_t>d[j + 1] << 8) | (<uint32_t>d[j + 2] << 16)
                     | (<uint32_t>d[j + 3] << 24))
                k *= m
                k ^= k >> 24
                k *= m
                h *= m
                h ^= k
                j += 4
            rem = length & 3
            t = a + n4
            if rem == 3:
                h ^= <uint32_t>d[t + 2] << 16
            if rem >= 2:
                h ^= <uint32_t>d[t + 1] << 8
            if rem >= 1:
                h ^= <uint32_t>d[t]
                h *= m
            h ^= h >> 13
            h *= m
            h ^= h >> 15
            out[i] = (h & 0x7FFFFFFF) % <uint32_t>num_partitions
