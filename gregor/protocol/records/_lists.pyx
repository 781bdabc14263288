# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The records section of a v2 batch from Python lists of bytes, compiled. Optional
(gregor/compiled.py): encoding.py's numpy and per-record encoders are the reference, tests
compare the bytes, and GREGOR_PURE_PYTHON=1 runs without it.

Why: send()'s batches arrive as lists of bytes objects. The numpy encoders must first gather
them into arrays (a join and a length pass, under the GIL) and only reach ~150-250 ns a
record, less when lengths vary; the numba kernels need the same gathering. Reading each bytes
object's pointer and length in C and writing the record in one pass costs ~15-30 ns a
record, whatever the lengths.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

import numpy as np


cdef inline uint64_t zigzag(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline Py_ssize_t zz_size(int64_t v) noexcept nogil:
    """Bytes of v as a zig-zag varint."""
    cdef uint64_t z = zigzag(v)
    cdef Py_ssize_t n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


cdef inline uint8_t *put_zz(uint8_t *out, int64_t v) noexcept nogil:
    cdef uint64_t z = zigzag(v)
    while z >= 0x80:
        out[0] = <uint8_t>(z | 0x80)
        out += 1
        z >>= 7
    out[0] = <uint8_t>z
    return out + 1


cdef inline Py_ssize_t length_of(object item) except -2:
    """len of a bytes item, -1 for None, -2 (no exception) for anything else."""
    if item is None:
        return -1
    if type(item) is bytes:
        return PyBytes_GET_SIZE(item)
    return -3


def encode_records_lists(timestamps, list keys, list values, int64_t base_timestamp,
                         alloc=None):
    """Records (no headers) for keys / values: lists of bytes or None (keys may be None:
    all null); timestamps one int or int64 milliseconds per record. Written into
    alloc(nbytes) (a writable buffer of exactly that size) and returned as a memoryview of
    it; by default into a new bytearray, returned as is. None when an item is neither bytes
    nor None (the caller's other encoders take those)."""
    cdef Py_ssize_t n = len(values), i, klen, vlen, body, total = 0
    cdef int64_t ts_all = 0, t
    cdef const int64_t[::1] ts
    cdef bint one_ts = isinstance(timestamps, int)
    cdef bint no_keys = keys is None
    if not no_keys and len(keys) != n:
        raise ValueError(f"{len(keys)} keys for {n} values")
    if one_ts:
        ts_all = timestamps
    else:
        ts = np.ascontiguousarray(timestamps, dtype=np.int64)
        if ts.shape[0] != n:
            raise ValueError(f"{ts.shape[0]} timestamps for {n} values")
    for i in range(n):
        klen = -1 if no_keys else length_of(keys[i])
        vlen = length_of(values[i])
        if klen == -3 or vlen == -3:
            return None
        body = 2 + zz_size((ts_all if one_ts else ts[i]) - base_timestamp) + zz_size(i) \
            + zz_size(klen) + (klen if klen > 0 else 0) + zz_size(vlen) \
            + (vlen if vlen > 0 else 0)
        total += zz_size(body) + body
    out = bytearray(total) if alloc is None else alloc(total)
    cdef uint8_t[::1] view = out
    if total == 0:
        return out if alloc is None else memoryview(out)
    cdef uint8_t *p = &view[0]
    cdef uint8_t *end = p + total
    for i in range(n):
        k = None if no_keys else keys[i]
        v = values[i]
        klen = length_of(k)
        vlen = length_of(v)
        if klen == -3 or vlen == -3:  # alloc() ran Python code: the lists changed under us
            raise RuntimeError("records changed while being encoded")
        t = (ts_all if one_ts else ts[i]) - base_timestamp
        body = 2 + zz_size(t) + zz_size(i) + zz_size(klen) + (klen if klen > 0 else 0) \
            + zz_size(vlen) + (vlen if vlen > 0 else 0)
        if p + zz_size(body) + body > end:
            raise RuntimeError("records changed while being encoded")
        p = put_zz(p, body)
        p[0] = 0                           # attributes
        p = put_zz(p + 1, t)
        p = put_zz(p, i)
        p = put_zz(p, klen)
        if klen > 0:
            memcpy(p, PyBytes_AS_STRING(k), klen)
            p += klen
        p = put_zz(p, vlen)
        if vlen > 0:
            memcpy(p, PyBytes_AS_STRING(v), vlen)
            p += vlen
        p[0] = 0                           # header count
        p += 1
    if p != end:
        raise RuntimeError("records changed while being encoded")
    return out if alloc is None else memoryview(out)
