# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The records of v2 batch bodies straight into Arrow buffers, compiled. Optional
(gregor/compiled.py): vector_decode.py's numpy decoder (record_fields plus Arrow `take`s in
arrow_records.py) is the reference, tests compare the arrays, and GREGOR_PURE_PYTHON=1 runs
without it.

Why: a bulk reader (the Spark source) turns every fetched record into Arrow keys and values.
The numpy path needs a sequential Python pass to find where records start, several array
passes per field, and two gathers that copy keys and values out of the batch bytes: ~0.7 s of
CPU per million 100-byte records, about half of what a Spark read of a topic costs on the
reading side. One pass in C that parses each record and copies its key and value into
contiguous Arrow buffers does the same in a fraction of it.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

import numpy as np


cdef inline Py_ssize_t read_varlong(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end,
                                    int64_t *out) noexcept nogil:
    """Zig-zag varint at p[pos:]; returns the position after it, or -1 when it runs past end
    or is longer than 10 bytes."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if pos >= end or shift > 63:
            return -1
        b = p[pos]
        pos += 1
        raw |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
    out[0] = <int64_t>(raw >> 1) ^ -(<int64_t>(raw & 1))
    return pos


def decode_bodies(list bodies, list counts):
    """(offset_deltas, timestamp_deltas, keys, values) for every record of the batch bodies
    (bytes; uncompressed records sections), keys and values as (validity or None, offsets,
    data) buffers of Arrow binary arrays; or None when a record has headers or is not a
    well-formed v2 record (the careful decoders handle and report those)."""
    cdef Py_ssize_t total = 0, room = 0, i, k, n, pos, end, rec_end, klen_i, vlen_i
    cdef Py_ssize_t rec = 0, kfill = 0, vfill = 0
    cdef int64_t length, ts_delta, off_delta, klen, vlen, hcount
    cdef const uint8_t *p
    for i in range(len(bodies)):
        total += <Py_ssize_t>counts[i]
        room += PyBytes_GET_SIZE(bodies[i])
    if room > 2147483647:
        return None  # Arrow binary offsets are int32
    off_arr = np.empty(total, np.int64)
    ts_arr = np.empty(total, np.int64)
    koff_arr = np.empty(total + 1, np.int32)
    voff_arr = np.empty(total + 1, np.int32)
    kvalid_arr = np.ones(total, np.uint8)
    vvalid_arr = np.ones(total, np.uint8)
    kdata_arr = np.empty(max(room, 1), np.uint8)
    vdata_arr = np.empty(max(room, 1), np.uint8)
    cdef int64_t[::1] offd = off_arr
    cdef int64_t[::1] tsd = ts_arr
    cdef int32_t[::1] koff = koff_arr
    cdef int32_t[::1] voff = voff_arr
    cdef uint8_t[::1] kvalid = kvalid_arr
    cdef uint8_t[::1] vvalid = vvalid_arr
    cdef uint8_t[::1] kdata = kdata_arr
    cdef uint8_t[::1] vdata = vdata_arr
    cdef bint knull = False, vnull = False
    koff[0] = 0
    voff[0] = 0
    for i in range(len(bodies)):
        body = bodies[i]
        p = <const uint8_t *>PyBytes_AS_STRING(body)
        end = PyBytes_GET_SIZE(body)
        n = counts[i]
        pos = 0
        for k in range(n):
            pos = read_varlong(p, pos, end, &length)
            if pos < 0 or length < 0 or pos + length > end:
                return None
            rec_end = pos + length
            pos += 1  # attributes
            pos = read_varlong(p, pos, rec_end, &ts_delta)
            if pos < 0:
                return None
            pos = read_varlong(p, pos, rec_end, &off_delta)
            if pos < 0:
                return None
            pos = read_varlong(p, pos, rec_end, &klen)
            if pos < 0 or klen < -1 or pos + klen > rec_end:
                return None
            if klen < 0:
                kvalid[rec] = 0
                knull = True
            else:
                klen_i = <Py_ssize_t>klen
                memcpy(&kdata[kfill], p + pos, klen_i)
                kfill += klen_i
                pos += klen_i
            koff[rec + 1] = <int32_t>kfill
            pos = read_varlong(p, pos, rec_end, &vlen)
            if pos < 0 or vlen < -1 or pos + vlen > rec_end:
                return None
            if vlen < 0:
                vvalid[rec] = 0
                vnull = True
            else:
                vlen_i = <Py_ssize_t>vlen
                memcpy(&vdata[vfill], p + pos, vlen_i)
                vfill += vlen_i
                pos += vlen_i
            voff[rec + 1] = <int32_t>vfill
            pos = read_varlong(p, pos, rec_end, &hcount)
            if pos < 0 or hcount != 0 or pos != rec_end:
                return None  # headers, or not what the length says
            offd[rec] = off_delta
            tsd[rec] = ts_delta
            rec += 1
        if pos != end:
            return None
    return (off_arr, ts_arr,
            (kvalid_arr if knull else None, koff_arr, kdata_arr[:kfill]),
            (vvalid_arr if vnull else None, voff_arr, vdata_arr[:vfill]))
