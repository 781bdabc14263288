# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Arrow columns straight into Confluent-framed Avro binary, compiled: one pass over the rows,
walking a tree of nodes (gregor/serde/avro_encode.py builds it once per batch from the Avro
schema and the Arrow array), so no Python object is made per record. fastavro's
schemaless_writer is the reference: tests compare the bytes.

Node rows: (kind, first child in `kids`, number of children, aux). aux is a fixed's width or
a nullable union's null branch (0 or 1).
Each node's buffers are indexed by the element of its own Arrow array: values (fixed-width
numbers, one int64 per int/long/enum/date/timestamp), validity bytes (or none), int64
offsets for bytes/strings/arrays/maps.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import numpy as np

cdef enum:
    N_NULL = 0
    N_BOOL = 1
    N_LONG = 2
    N_FLOAT = 3
    N_DOUBLE = 4
    N_BYTES = 5
    N_FIXED = 6
    N_RECORD = 7
    N_ARRAY = 8
    N_MAP = 9
    N_UNION = 10
    N_DECIMAL = 11

cdef enum:
    E_NULL = 1
    E_MEMORY = 2
    E_TOO_BIG = 3

ERRORS = {E_NULL: "a null value where the schema has no null branch",
          E_MEMORY: "out of memory", E_TOO_BIG: "the batch encodes to over 2 GiB"}


cdef struct Node:
    int64_t kind
    int64_t first
    int64_t count
    int64_t aux
    const uint8_t *valid
    const uint8_t *data
    const int64_t *offs


cdef struct Out:
    uint8_t *buf
    Py_ssize_t fill
    Py_ssize_t cap
    int err
    int64_t bad_node


cdef inline int reserve(Out *o, Py_ssize_t more) noexcept nogil:
    cdef Py_ssize_t need = o.fill + more
    cdef uint8_t *grown
    if need <= o.cap:
        return 0
    while o.cap < need:
        o.cap *= 2
    grown = <uint8_t *>realloc(o.buf, o.cap)
    if grown == NULL:
        o.err = E_MEMORY
        return -1
    o.buf = grown
    return 0


cdef inline int put_long(Out *o, int64_t v) noexcept nogil:
    cdef uint64_t z = (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)
    if reserve(o, 10) < 0:
        return -1
    while z >= 0x80:
        o.buf[o.fill] = <uint8_t>((z & 0x7F) | 0x80)
        o.fill += 1
        z >>= 7
    o.buf[o.fill] = <uint8_t>z
    o.fill += 1
    return 0


cdef inline int put_raw(Out *o, const uint8_t *src, Py_ssize_t n) noexcept nogil:
    if reserve(o, n) < 0:
        return -1
    memcpy(o.buf + o.fill, src, n)
    o.fill += n
    return 0


cdef int put_decimal(Out *o, const uint8_t *le16) noexcept nogil:
    # Two's complement big-endian in as many bytes as the magnitude's bit length + 1 needs
    # (how fastavro sizes it: -128 takes two bytes).
    cdef uint64_t lo, hi, mlo, mhi
    cdef int bits = 0, nbytes, k
    cdef uint8_t be[17]
    memcpy(&lo, le16, 8)
    memcpy(&hi, le16 + 8, 8)
    mlo, mhi = lo, hi
    if <int64_t>hi < 0:                       # magnitude = -v
        mlo = ~lo + 1
        mhi = ~hi + (1 if mlo == 0 else 0)
    if mhi:
        bits = 64
        while mhi:
            bits += 1
            mhi >>= 1
    else:
        while mlo:
            bits += 1
            mlo >>= 1
    nbytes = (bits + 8) // 8
    for k in range(nbytes):
        if k < 8:
            be[nbytes - 1 - k] = <uint8_t>(lo >> (8 * k))
        elif k < 16:
            be[nbytes - 1 - k] = <uint8_t>(hi >> (8 * (k - 8)))
        else:
            be[nbytes - 1 - k] = 0xFF if <int64_t>hi < 0 else 0
    if put_long(o, nbytes) < 0:
        return -1
    return put_raw(o, be, nbytes)


cdef int encode(const Node *nodes, const int64_t *kids, int64_t ni, int64_t idx,
                Out *o) noexcept nogil:
    cdef const Node *nd = &nodes[ni]
    cdef const Node *child
    cdef int64_t kind = nd.kind, k, j, a, b
    if kind == N_UNION:
        child = &nodes[kids[nd.first]]
        if child.valid != NULL and child.valid[idx] == 0:
            return put_long(o, nd.aux)
        if put_long(o, 1 - nd.aux) < 0:
            return -1
        return encode(nodes, kids, kids[nd.first], idx, o)
    if nd.valid != NULL and nd.valid[idx] == 0 and kind != N_NULL:
        o.err = E_NULL
        o.bad_node = ni
        return -1
    if kind == N_LONG:
        return put_long(o, (<const int64_t *>nd.data)[idx])
    if kind == N_BYTES:
        a = nd.offs[idx]
        b = nd.offs[idx + 1]
        if put_long(o, b - a) < 0:
            return -1
        return put_raw(o, nd.data + a, b - a)
    if kind == N_DOUBLE:
        return put_raw(o, nd.data + 8 * idx, 8)
    if kind == N_FLOAT:
        return put_raw(o, nd.data + 4 * idx, 4)
    if kind == N_BOOL:
        if reserve(o, 1) < 0:
            return -1
        o.buf[o.fill] = 1 if nd.data[idx] else 0
        o.fill += 1
        return 0
    if kind == N_RECORD:
        for k in range(nd.count):
            if encode(nodes, kids, kids[nd.first + k], idx, o) < 0:
                return -1
        return 0
    if kind == N_ARRAY or kind == N_MAP:
        a = nd.offs[idx]
        b = nd.offs[idx + 1]
        if b > a:
            if put_long(o, b - a) < 0:
                return -1
            for j in range(a, b):
                for k in range(nd.count):      # an array's item; a map's key, then value
                    if encode(nodes, kids, kids[nd.first + k], j, o) < 0:
                        return -1
        return put_long(o, 0)
    if kind == N_FIXED:
        return put_raw(o, nd.data + nd.aux * idx, nd.aux)
    if kind == N_DECIMAL:
        return put_decimal(o, nd.data + 16 * idx)
    return 0                                   # N_NULL writes nothing


def encode_rows(int64_t n, const uint8_t[::1] head, const int64_t[:, ::1] table,
                const int64_t[::1] kids, list valid, list data, list offs):
    """Rows 0..n-1 of node 0, each prefixed with head (the Confluent header). valid / data /
    offs hold each node's numpy buffers (or None). Returns (payload bytes, int32 offsets
    (n + 1) as a numpy array, failing row or -1, error code, failing node)."""
    cdef Py_ssize_t n_nodes = table.shape[0], i, r
    cdef Node *nodes = <Node *>malloc(max(n_nodes, 1) * sizeof(Node))
    cdef Out o
    cdef const uint8_t[::1] mv8
    cdef const int64_t[::1] mv64
    cdef int64_t bad = -1
    cdef const int64_t *kp = &kids[0] if kids.shape[0] else NULL
    cdef const uint8_t *hp = &head[0]
    cdef Py_ssize_t hn = head.shape[0]
    out_offs = np.empty(n + 1, np.int32)
    cdef int32_t[::1] oo = out_offs
    if nodes == NULL:
        raise MemoryError()
    for i in range(n_nodes):
        nodes[i].kind = table[i, 0]
        nodes[i].first = table[i, 1]
        nodes[i].count = table[i, 2]
        nodes[i].aux = table[i, 3]
        nodes[i].valid = NULL
        nodes[i].data = NULL
        nodes[i].offs = NULL
        if valid[i] is not None:
            mv8 = valid[i]
            nodes[i].valid = &mv8[0] if mv8.shape[0] else NULL
        if data[i] is not None:
            mv8 = data[i]
            nodes[i].data = &mv8[0] if mv8.shape[0] else NULL
        if offs[i] is not None:
            mv64 = offs[i]
            nodes[i].offs = &mv64[0] if mv64.shape[0] else NULL
    o.cap = 64 + n * (hn + 16)
    o.fill = 0
    o.err = 0
    o.bad_node = -1
    o.buf = <uint8_t *>malloc(o.cap)
    if o.buf == NULL:
        free(nodes)
        raise MemoryError()
    oo[0] = 0
    with nogil:
        for r in range(n):
            if nodes[0].valid == NULL or nodes[0].valid[r] != 0:
                if put_raw(&o, hp, hn) < 0 or encode(nodes, kp, 0, r, &o) < 0:
                    bad = r
                    break
            if o.fill > 2147483647:
                o.err = E_TOO_BIG
                bad = r
                break
            oo[r + 1] = <int32_t>o.fill
    try:
        payload = (<char *>o.buf)[:o.fill] if o.fill else b""
    finally:
        free(o.buf)
        free(nodes)
    return payload, out_offs, bad, o.err, o.bad_node
