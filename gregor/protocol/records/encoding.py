"""Encoding the records section of a v2 batch, and assembling a batch around it.

A v2 record is: length varint, attributes int8 (always 0), timestamp delta varlong, offset delta
varint, key length varint (-1 = null), key, value length varint, value, header count varint,
then per header: key length varint, key (UTF-8), value length varint (-1 = null), value.

Three encoders produce identical bytes, and encode_records picks one:
- `encode_records_loop`: plain Python, any records (headers, big lengths, anything).
- `_encode_records_small`: records without headers whose lengths fit a table of pre-encoded
  varints: list comprehensions joining table entries, ~0.3 us per record.
- `encode_records_uniform`: many records without headers whose keys all have one length (or
  are all null) and whose values all have one length. Such records differ only in the byte
  lengths of their timestamp and offset deltas, so each run of equal layout is written as a
  2-D numpy block, column by column, with no per-record Python work at all.
(A numpy path for records of varying lengths, joining per-record pieces, was measured no
faster than the comprehension loop and was dropped.)
When the optional compiled module is built (_lists.pyx, gregor/compiled.py), records without
headers in lists of bytes/None go through it instead, any lengths, ~25 ns a record; the
encoders above stay the reference (tests compare the bytes) and take everything else.
"""
from __future__ import annotations

import io
import struct
import threading

import crc32c
import numpy as np

from ..compression import NONE, compress
from ..primitives import encode_varint
from ...compiled import load
from .header import CONTROL_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT

_compiled = load("gregor.protocol.records._lists")

# Pre-encoded zig-zag varints for 0 <= n < 2**14 (lengths, offset deltas and timestamp deltas
# up to ~16 s fall in here; each entry is at most 3 bytes). 16384 small bytes objects: ~600 KB.
_TABLE_SIZE = 1 << 14
VARINTS: list[bytes] = [encode_varint(i) for i in range(_TABLE_SIZE)]
NULL_VARINT = encode_varint(-1)

# Below this many records the numpy set-up (~40 numpy calls) costs more than it saves; the
# measured crossover with the plain loop on 10 B keys / 100 B values is 500-1000 records.
UNIFORM_MIN_RECORDS = 768

# Scratch buffers up to this size are kept (per thread) and reused by the uniform encoder:
# on this kind of VM a fresh multi-megabyte allocation costs a page fault per 4 KiB touched,
# measured at about half of that encoder's time. Larger ones are not kept, to bound memory
# held between calls.
_SCRATCH_KEEP = 8 << 20
_scratch = threading.local()

_TAIL = struct.Struct(">hiqqqhii")     # attributes .. records_count (after the CRC)
_HEAD = struct.Struct(">qiibI")        # base_offset, batch_length, leader epoch, magic, crc


def varint(n: int) -> bytes:
    return VARINTS[n] if 0 <= n < _TABLE_SIZE else encode_varint(n)


def encode_header_list(headers) -> bytes:
    """Encode [(key str|bytes, value bytes|None), ...] including the count varint."""
    parts = [varint(len(headers))]
    for hk, hv in headers:
        if isinstance(hk, str):
            hk = hk.encode("utf-8")
        parts.append(varint(len(hk)))
        parts.append(hk)
        if hv is None:
            parts.append(NULL_VARINT)
        else:
            if isinstance(hv, str):
                hv = hv.encode("utf-8")
            parts.append(varint(len(hv)))
            parts.append(hv)
    return b"".join(parts)


def encode_records_loop(timestamps, keys, values, headers, base_timestamp: int) -> bytes:
    """Records section for parallel sequences; headers may be None (no record has any) or a
    sequence of header lists / None."""
    parts = []
    extend = parts.extend
    V = VARINTS
    lim = _TABLE_SIZE
    no_headers = b"\x00"
    for i, ts, key, value in zip(range(len(keys)), timestamps, keys, values):
        d = ts - base_timestamp
        td = V[d] if 0 <= d < lim else encode_varint(d)
        od = V[i] if i < lim else encode_varint(i)
        if key is None:
            kl = NULL_VARINT
            key = b""
        else:
            n = len(key)
            kl = V[n] if n < lim else encode_varint(n)
        if value is None:
            vl = NULL_VARINT
            value = b""
        else:
            n = len(value)
            vl = V[n] if n < lim else encode_varint(n)
        hs = no_headers
        if headers is not None:
            h = headers[i]
            if h:
                hs = encode_header_list(h)
        size = 1 + len(td) + len(od) + len(kl) + len(key) + len(vl) + len(value) + len(hs)
        extend((V[size] if size < lim else encode_varint(size), b"\x00", td, od, kl, key, vl,
                value, hs))
    return b"".join(parts)


def _zz_len_fast(z: np.ndarray) -> np.ndarray:
    """Byte length of the varint of each already zig-zagged int64 in z."""
    out = np.ones(z.shape, dtype=np.int64)
    for k in (7, 14, 21, 28, 35, 42, 49, 56, 63):
        m = z >= (1 << k)
        if not m.any():
            break
        out += m
    return out


def _put_varints(block: np.ndarray, col: int, zz: np.ndarray, nbytes: int) -> None:
    """Write the nbytes-long varints of zig-zagged values zz into columns col.. of block."""
    for k in range(nbytes):
        byte = (zz >> (7 * k)) & 0x7F
        if k < nbytes - 1:
            byte |= 0x80
        block[:, col + k] = byte


def encode_records_uniform(timestamps, keys, values, base_timestamp: int, alloc=None):
    """Records section for records whose keys (or all-null keys) and values each have one
    length, or None when they do not. Records then differ only in the byte lengths of their
    timestamp and offset deltas, so each run of records with the same layout is written as
    one 2-D numpy block, column by column: no per-record Python work at all. alloc(nbytes)
    may supply the output (exact size); by default a per-thread scratch buffer."""
    n = len(values)
    if not isinstance(values, list) or not isinstance(keys, list):
        return None
    # list(map(len, ...)).count(first) is the cheapest exact check found (~15 ns a record)
    try:
        vlen = len(values[0])
        if len(values[n // 2]) != vlen or len(values[-1]) != vlen or \
                list(map(len, values)).count(vlen) != n:   # (cheap rejections first)
            return None
    except TypeError:        # a null value
        return None
    try:
        klens = list(map(len, keys))     # one pass; a null key raises
    except TypeError:
        if keys.count(None) != n:        # some keys null, some not
            return None
        klen = -1
    else:
        klen = klens[0]
        if klens.count(klen) != n:
            return None
    if isinstance(timestamps, int):
        tdz = np.full(n, timestamps - base_timestamp, dtype=np.int64)
    else:
        tdz = np.asarray(timestamps, dtype=np.int64) - base_timestamp
    tdz = np.where(tdz < 0, (-tdz << 1) - 1, tdz << 1)
    odz = np.arange(0, 2 * n, 2, dtype=np.int64)
    layout = _zz_len_fast(tdz) * 16 + _zz_len_fast(odz)
    cuts = np.flatnonzero(layout[1:] != layout[:-1]) + 1
    if len(cuts) > 32:        # scattered timestamps: many tiny blocks; the loop wins
        return None
    bounds = [0, *cuts.tolist(), n]
    kl_piece = varint(klen)
    vl_piece = varint(vlen)
    kbytes = max(klen, 0)
    fixed = 1 + len(kl_piece) + kbytes + len(vl_piece) + vlen + 1   # attrs .. header count
    runs = []
    total = 0
    for a, b in zip(bounds, bounds[1:]):
        code = int(layout[a])
        td_n, od_n = code >> 4, code & 15
        body = fixed + td_n + od_n
        size = len(varint(body)) + body
        runs.append((a, b, td_n, od_n, body, size, total))
        total += (b - a) * size
    out = (alloc or _scratch_array)(total)
    kmat = _gathered("keys", keys, n * kbytes).reshape(n, kbytes) if kbytes else None
    vmat = _gathered("values", values, n * vlen).reshape(n, vlen) if vlen else None
    for a, b, td_n, od_n, body, size, start in runs:
        block = out[start:start + (b - a) * size].reshape(b - a, size)
        prefix = varint(body) + b"\x00"
        c = len(prefix)
        block[:, :c] = np.frombuffer(prefix, dtype=np.uint8)
        _put_varints(block, c, tdz[a:b], td_n)
        c += td_n
        _put_varints(block, c, odz[a:b], od_n)
        c += od_n
        block[:, c:c + len(kl_piece)] = np.frombuffer(kl_piece, dtype=np.uint8)
        c += len(kl_piece)
        if kbytes:
            block[:, c:c + kbytes] = kmat[a:b]
            c += kbytes
        block[:, c:c + len(vl_piece)] = np.frombuffer(vl_piece, dtype=np.uint8)
        c += len(vl_piece)
        if vlen:
            block[:, c:c + vlen] = vmat[a:b]
            c += vlen
        block[:, c] = 0
    return memoryview(out)


def _scratch_array(nbytes: int) -> np.ndarray:
    """A uint8 array of nbytes, reused between calls on this thread when small enough."""
    if nbytes > _SCRATCH_KEEP:
        return np.empty(nbytes, dtype=np.uint8)
    arr = getattr(_scratch, "out", None)
    if arr is None or len(arr) < nbytes:
        arr = _scratch.out = np.empty(max(nbytes, 1 << 16), dtype=np.uint8)
    return arr[:nbytes]


def _gathered(slot: str, items, nbytes: int) -> np.ndarray:
    """items (bytes objects) copied end to end, as a uint8 array; through a reused BytesIO
    when small enough (see _SCRATCH_KEEP), else one bytes.join."""
    if nbytes > _SCRATCH_KEEP:
        return np.frombuffer(b"".join(items), dtype=np.uint8)
    bio = getattr(_scratch, slot, None)
    try:
        if bio is None:
            raise BufferError
        bio.seek(0)
        bio.writelines(items)
    except BufferError:        # first use, or a view of the last call is still alive
        bio = io.BytesIO()
        setattr(_scratch, slot, bio)
        bio.writelines(items)
    return np.frombuffer(bio.getbuffer(), dtype=np.uint8, count=nbytes)


def _encode_records_small(timestamps, keys, values, base_timestamp: int) -> bytes:
    """Plain-Python records section for records without headers whose lengths all fall in
    the varint table; raises IndexError when one does not (the caller then falls back to
    encode_records_loop). The common shapes (no null values; keys all present or all null)
    run as list comprehensions, a little cheaper than the general loop."""
    V = VARINTS
    lim = _TABLE_SIZE
    n = len(values)
    if n > lim or not isinstance(keys, list) or not isinstance(values, list) or \
            values.count(None):
        return _encode_records_small_nulls(timestamps, keys, values, base_timestamp)
    null_keys = keys.count(None)
    if null_keys == 0:
        bodies = [b"".join((b"\x00", V[d] if 0 <= (d := ts - base_timestamp) < lim
                            else encode_varint(d), od, V[len(key)], key, V[len(value)],
                            value, b"\x00"))
                  for ts, key, value, od in zip(timestamps, keys, values, V)]
    elif null_keys == n:
        bodies = [b"".join((b"\x00", V[d] if 0 <= (d := ts - base_timestamp) < lim
                            else encode_varint(d), od, NULL_VARINT, V[len(value)], value,
                            b"\x00"))
                  for ts, value, od in zip(timestamps, values, V)]
    else:
        return _encode_records_small_nulls(timestamps, keys, values, base_timestamp)
    parts = [None] * (2 * n)
    parts[1::2] = bodies
    parts[0::2] = [V[len(body)] for body in bodies]
    return b"".join(parts)


def _encode_records_small_nulls(timestamps, keys, values, base_timestamp: int) -> bytes:
    parts = []
    extend = parts.extend
    V = VARINTS
    lim = _TABLE_SIZE
    i = 0
    for ts, key, value in zip(timestamps, keys, values):
        d = ts - base_timestamp
        td = V[d] if 0 <= d < lim else encode_varint(d)
        if key is None:
            kl = NULL_VARINT
            key = b""
        else:
            kl = V[len(key)]
        if value is None:
            vl = NULL_VARINT
            value = b""
        else:
            vl = V[len(value)]
        body = b"".join((b"\x00", td, V[i], kl, key, vl, value, b"\x00"))
        extend((V[len(body)], body))
        i += 1
    return b"".join(parts)


class ArrowRows:
    """Rows `rows` (int64 indices, in order) of a pyarrow binary array, standing in for the
    array that `array.take(rows)` would copy: the encoder reads the selected rows in place."""

    __slots__ = ("array", "rows")

    def __init__(self, array, rows: np.ndarray):
        self.array = array
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def to_pylist(self) -> list:
        return self.array.take(self.rows).to_pylist()


def is_arrow(x) -> bool:
    """A pyarrow array, or selected rows of one (ArrowRows)?"""
    return isinstance(x, ArrowRows) or type(x).__module__.startswith("pyarrow")


def encode_records_arrow(timestamps, keys, values, base_timestamp: int, alloc=None):
    """Records section of headerless records whose values (and keys, unless None) are pyarrow
    binary arrays or ArrowRows selections of them (keys and values then select the same
    rows): the compiled kernel reads the Arrow buffers in place. Returns a memoryview of a
    per-thread scratch buffer (see encode_records)."""
    from .kernels import Column, encode_records_columns
    n = len(values)
    rows = None
    if isinstance(values, ArrowRows):
        rows, values = values.rows, values.array
        keys = keys.array if isinstance(keys, ArrowRows) else keys
    vcol = Column.from_arrow(values)
    if keys is None or (not is_arrow(keys) and keys.count(None) == len(keys)):
        kcol = Column.nulls(len(values))
    else:
        kcol = Column.from_arrow(keys) if is_arrow(keys) else Column.from_list(keys)
    if isinstance(timestamps, (int, np.integer)):
        tdelta = np.full(n, int(timestamps) - base_timestamp, dtype=np.int64)
    else:
        tdelta = np.asarray(timestamps, dtype=np.int64) - base_timestamp
    return memoryview(encode_records_columns(kcol, vcol, tdelta, rows,
                                             alloc or _scratch_array))


_BATCH_HEADER = _HEAD.size + _TAIL.size      # 61 bytes before the records section


def assemble_in_place(encode, count: int, base_timestamp: int, max_timestamp: int, *,
                      base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                      base_sequence: int = -1, transactional: bool = False,
                      partition_leader_epoch: int = -1) -> bytearray | None:
    """An uncompressed batch whose records section encode(alloc) writes straight into the
    batch's buffer (alloc(nbytes) gives a uint8 array of exactly the section's size after
    room for the header): no copy of the section into a batch (assemble_batch's join).
    None when encode returns None (it declined the records)."""
    buffers = []

    def alloc(size):
        # The exact final size: the batch is never resized afterwards (a resize fails while
        # any view of the buffer is alive) and no slack is zero-filled.
        buf = bytearray(_BATCH_HEADER + size)
        buffers.append(buf)
        return np.frombuffer(buf, dtype=np.uint8, offset=_BATCH_HEADER)
    section = encode(alloc)
    if section is None:
        return None
    end = len(section)
    section.release()
    buf = buffers.pop()
    attrs = TRANSACTIONAL_BIT if transactional else 0
    _TAIL.pack_into(buf, _HEAD.size, attrs, count - 1, base_timestamp, max_timestamp,
                    producer_id, producer_epoch, base_sequence, count)
    crc = crc32c.crc32c(memoryview(buf)[_HEAD.size:])
    _HEAD.pack_into(buf, 0, base_offset, 49 + end, partition_leader_epoch, 2, crc)
    return buf


def assemble_arrow_batch(timestamps, keys, values, base_timestamp: int, max_timestamp: int,
                         **fields) -> bytearray:
    """An uncompressed batch of headerless records from Arrow columns (see
    encode_records_arrow), written in place (assemble_in_place)."""
    return assemble_in_place(
        lambda alloc: encode_records_arrow(timestamps, keys, values, base_timestamp, alloc),
        len(values), base_timestamp, max_timestamp, **fields)


def _takes_lists(keys, values, timestamps) -> bool:
    """Whether the compiled list encoder is built and these are its kind of input (it still
    declines items that are not bytes or None)."""
    return _compiled is not None and type(values) is list and \
        (keys is None or type(keys) is list) and \
        (isinstance(timestamps, (int, np.ndarray)) or type(timestamps) is list)


def assemble_lists_batch(timestamps, keys, values, base_timestamp: int, max_timestamp: int,
                         **fields) -> bytearray | None:
    """An uncompressed batch of headerless records from lists, written in place by the
    compiled list encoder; None when it is not built or declines the records."""
    if not _takes_lists(keys, values, timestamps):
        return None
    return assemble_in_place(
        lambda alloc: _compiled.encode_records_lists(timestamps, keys, values, base_timestamp,
                                                     alloc),
        len(values), base_timestamp, max_timestamp, **fields)


def assemble_uniform_batch(timestamps, keys, values, base_timestamp: int, max_timestamp: int,
                           **fields) -> bytearray | None:
    """An uncompressed batch of records the uniform encoder takes (lists, no headers, one
    key length and one value length), written in place; None when it does not take them."""
    if keys is None:
        keys = [None] * len(values)
    return assemble_in_place(
        lambda alloc: encode_records_uniform(timestamps, keys, values, base_timestamp, alloc),
        len(values), base_timestamp, max_timestamp, **fields)


def encode_records(timestamps, keys, values, headers, base_timestamp: int):
    """Pick the cheapest encoder; headers None means no record has headers. keys/values are
    lists of bytes/None, or pyarrow binary arrays (keys may also be None: all null). Returns
    bytes, or a memoryview (uniform path: of a per-thread scratch buffer that stays valid only
    until the next call on this thread; assemble_batch copies it into the batch at once)."""
    if is_arrow(values):
        if headers is None:
            return encode_records_arrow(timestamps, keys, values, base_timestamp)
        values = values.to_pylist()
        keys = keys.to_pylist() if is_arrow(keys) else keys
    if headers is None and _takes_lists(keys, values, timestamps):
        out = _compiled.encode_records_lists(timestamps, keys, values, base_timestamp)
        if out is not None:
            return out
    if keys is None:
        keys = [None] * len(values)
    if headers is None and len(values) >= UNIFORM_MIN_RECORDS:
        out = encode_records_uniform(timestamps, keys, values, base_timestamp)
        if out is not None:
            return out
    if isinstance(timestamps, int):
        timestamps = [timestamps] * len(values)
    elif isinstance(timestamps, np.ndarray):
        timestamps = timestamps.tolist()
    if headers is None:
        try:
            return _encode_records_small(timestamps, keys, values, base_timestamp)
        except IndexError:
            pass   # a length beyond the table: the general loop handles it
    return encode_records_loop(timestamps, keys, values, headers, base_timestamp)


def assemble_batch(records_section, count: int, base_timestamp: int, max_timestamp: int, *,
                   base_offset: int = 0, compression: int = NONE, log_append_time: bool = False,
                   producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                   transactional: bool = False, control: bool = False,
                   partition_leader_epoch: int = -1, last_offset_delta: int | None = None,
                   compression_level: int | None = None, mutable: bool = False):
    """Wrap an encoded records section in a v2 batch header (compressing it if asked).
    mutable=True returns a bytearray (same cost): a producer then rewrites the producer
    id / sequence fields in place at drain instead of copying the batch twice."""
    payload = records_section
    if compression:
        payload = compress(compression, records_section, compression_level)
    attrs = compression
    if log_append_time:
        attrs |= TIMESTAMP_TYPE_BIT
    if transactional:
        attrs |= TRANSACTIONAL_BIT
    if control:
        attrs |= CONTROL_BIT
    if last_offset_delta is None:
        last_offset_delta = count - 1
    tail = _TAIL.pack(attrs, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                      producer_epoch, base_sequence, count)
    crc = crc32c.crc32c(payload, crc32c.crc32c(tail))
    head = _HEAD.pack(base_offset, 49 + len(payload), partition_leader_epoch, 2, crc)
    if mutable:
        out = bytearray(len(head) + len(tail) + len(payload))
        out[:len(head)] = head
        out[len(head):len(head) + len(tail)] = tail
        out[len(head) + len(tail):] = payload
        return out
    return b"".join((head, tail, payload))
