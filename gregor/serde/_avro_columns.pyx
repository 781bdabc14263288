# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Avro binary records straight into Arrow column buffers, compiled: one pass over the
payloads, driven by a small program (gregor/serde/avro_program.py) made once per writer
schema, so no Python object is made per record. avro_arrow.py's fastavro path is the
reference (tests compare the arrays) and runs when this module is not built.

Program: rows of (kind, column, a, b, c), one per schema node in depth-first order. A
nullable union's row holds the null branch (a), the row after its subtree (b) and the end of
its subtree's columns (c): a null skips the subtree and marks its columns null.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np

cdef enum:
    K_NULL = 0
    K_BOOL = 1
    K_INT = 2
    K_LONG = 3
    K_FLOAT = 4
    K_DOUBLE = 5
    K_BYTES = 6
    K_FIXED = 7
    K_ENUM = 8
    K_RECORD = 9
    K_UNION = 10

cdef enum:
    E_TRUNCATED = 1
    E_BRANCH = 2
    E_ENUM = 3
    E_LENGTH = 4
    E_INT_RANGE = 5
    E_MEMORY = 6

ERRORS = {E_TRUNCATED: "truncated payload", E_BRANCH: "union branch out of range",
          E_ENUM: "enum index out of range", E_LENGTH: "negative or oversized length",
          E_INT_RANGE: "int out of the 32-bit range", E_MEMORY: "out of memory"}


cdef inline Py_ssize_t read_long(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end,
                                 int64_t *out) noexcept nogil:
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


def decode(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] ends,
           const int64_t[:, ::1] ops, list fixed_out, list valid_out, list offsets_out,
           const int64_t[::1] col_kind):
    """Decode rows starts[r]..ends[r] of data. fixed_out[c] / valid_out[c] / offsets_out[c]
    are numpy arrays (or None) the caller made for column c: values (n * width bytes),
    validity bytes (n), int32 offsets (n + 1) for bytes/strings. Returns (list of data bytes
    per bytes column (None for others), failing row or -1, error code)."""
    cdef Py_ssize_t n = starts.shape[0], n_ops = ops.shape[0], n_cols = col_kind.shape[0]
    cdef Py_ssize_t r, i, c, pos, end, width, need
    cdef int64_t v, kind, col, err = 0, bad = -1
    cdef float f32
    cdef double f64
    cdef char **fixed = <char **>malloc(n_cols * sizeof(char *))
    cdef uint8_t **valid = <uint8_t **>malloc(n_cols * sizeof(uint8_t *))
    cdef int32_t **offs = <int32_t **>malloc(n_cols * sizeof(int32_t *))
    cdef uint8_t **buf = <uint8_t **>malloc(n_cols * sizeof(uint8_t *))
    cdef Py_ssize_t *fill = <Py_ssize_t *>malloc(n_cols * sizeof(Py_ssize_t))
    cdef Py_ssize_t *cap = <Py_ssize_t *>malloc(n_cols * sizeof(Py_ssize_t))
    cdef uint8_t[::1] mv8
    cdef int32_t[::1] mv32
    cdef uint8_t *grown
    cdef const uint8_t *p = &data[0] if data.shape[0] else NULL
    cdef Py_ssize_t n_var = 0, total = 0
    if fixed == NULL or valid == NULL or offs == NULL or buf == NULL or fill == NULL or cap == NULL:
        free(fixed); free(valid); free(offs); free(buf); free(fill); free(cap)
        raise MemoryError()
    for r in range(n):
        total += ends[r] - starts[r]
    for c in range(n_cols):
        fixed[c] = NULL
        valid[c] = NULL
        offs[c] = NULL
        buf[c] = NULL
        fill[c] = 0
        cap[c] = 0
        if fixed_out[c] is not None:
            mv8 = fixed_out[c]
            fixed[c] = <char *>&mv8[0] if mv8.shape[0] else NULL
        if valid_out[c] is not None:
            mv8 = valid_out[c]
            valid[c] = &mv8[0] if mv8.shape[0] else NULL
        if offsets_out[c] is not None:
            mv32 = offsets_out[c]
            offs[c] = &mv32[0]
            offs[c][0] = 0
            n_var += 1
    # Bytes columns grow by doubling from an even share of the input (their sum can never
    # exceed it), so memory stays near what was received.
    for c in range(n_cols):
        if offs[c] != NULL:
            cap[c] = total // (n_var if n_var else 1) + 64
            buf[c] = <uint8_t *>malloc(cap[c])
            if buf[c] == NULL:
                err = E_MEMORY
    with nogil:
        r = 0
        while r < n and err == 0:
            pos = starts[r]
            end = ends[r]
            i = 0
            while i < n_ops:
                kind = ops[i, 0]
                col = ops[i, 1]
                if kind == K_LONG or kind == K_INT or kind == K_ENUM:
                    pos = read_long(p, pos, end, &v)
                    if pos < 0:
                        err = E_TRUNCATED
                        break
                    if kind == K_LONG:
                        (<int64_t *>fixed[col])[r] = v
                    elif kind == K_INT:
                        if v < -2147483648 or v > 2147483647:
                            err = E_INT_RANGE
                            break
                        (<int32_t *>fixed[col])[r] = <int32_t>v
                    else:
                        if v < 0 or v >= ops[i, 2]:
                            err = E_ENUM
                            break
                        (<int32_t *>fixed[col])[r] = <int32_t>v
                elif kind == K_BYTES:
                    pos = read_long(p, pos, end, &v)
                    if pos < 0:
                        err = E_TRUNCATED
                        break
                    if v < 0 or v > end - pos:
                        err = E_LENGTH
                        break
                    need = fill[col] + v
                    if need > cap[col]:
                        while cap[col] < need:
                            cap[col] *= 2
                        grown = <uint8_t *>realloc(buf[col], cap[col])
                        if grown == NULL:
                            err = E_MEMORY
                            break
                        buf[col] = grown
                    memcpy(buf[col] + fill[col], p + pos, v)
                    fill[col] = need
                    pos += v
                    offs[col][r + 1] = <int32_t>need
                elif kind == K_DOUBLE:
                    if end - pos < 8:
                        err = E_TRUNCATED
                        break
                    memcpy(fixed[col] + 8 * r, p + pos, 8)
                    pos += 8
                elif kind == K_FLOAT:
                    if end - pos < 4:
                        err = E_TRUNCATED
                        break
                    memcpy(fixed[col] + 4 * r, p + pos, 4)
                    pos += 4
                elif kind == K_BOOL:
                    if end - pos < 1:
                        err = E_TRUNCATED
                        break
                    (<uint8_t *>fixed[col])[r] = p[pos] != 0
                    pos += 1
                elif kind == K_FIXED:
                    width = ops[i, 2]
                    if end - pos < width:
                        err = E_TRUNCATED
                        break
                    memcpy(fixed[col] + width * r, p + pos, width)
                    pos += width
                elif kind == K_UNION:
                    pos = read_long(p, pos, end, &v)
                    if pos < 0:
                        err = E_TRUNCATED
                        break
                    if v != 0 and v != 1:
                        err = E_BRANCH
                        break
                    if v == ops[i, 2]:
                        for c in range(col, ops[i, 4]):
                            if valid[c] != NULL:
                                valid[c][r] = 0
                            if offs[c] != NULL:
                                offs[c][r + 1] = <int32_t>fill[c]
                        i = ops[i, 3]
                        continue
                # K_NULL and K_RECORD read nothing
                i += 1
            if err:
                bad = r
                break
            r += 1
    out = []
    try:
        for c in range(n_cols):
            if offs[c] != NULL:
                out.append((<char *>buf[c])[:fill[c]] if fill[c] else b"")
            else:
                out.append(None)
    finally:
        for c in range(n_cols):
            free(buf[c])
        free(fixed); free(valid); free(offs); free(buf); free(fill); free(cap)
    return out, bad, err
