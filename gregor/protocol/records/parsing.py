"""Low-level reading of a v2 batch shared by decoding and validation: the header, the
(decompressed) records section, varints and record headers."""
from __future__ import annotations

from ..compression import NONE, decompress
from ..primitives import DecodeError, decode_varint
from ..scratch_decompress import decompress_transient
from .errors import CorruptRecordsError
from .header import HEADER_SIZE, BatchHeader, compute_crc, parse_header


def header_at(buf, pos: int) -> BatchHeader:
    try:
        return parse_header(buf, pos)
    except DecodeError as e:
        raise CorruptRecordsError(str(e)) from None


def complete_batch_at(buf, pos: int, *, verify_crc: bool = True) -> BatchHeader:
    """The header of the v2 batch at pos, once the whole batch is known to be in buf and
    (with verify_crc) its CRC to match."""
    h = header_at(buf, pos)
    if pos + h.size > len(buf):
        raise CorruptRecordsError(f"batch at offset {h.base_offset} needs {h.size} bytes, "
                                  f"{len(buf) - pos} present")
    if verify_crc and compute_crc(buf, pos, h.size) != h.crc:
        raise CorruptRecordsError(f"CRC mismatch in batch at offset {h.base_offset}: the "
                                  f"bytes were damaged in transit or on disk")
    return h


def records_section(buf, pos: int, h: BatchHeader, max_decompressed: int, *,
                    transient: bool = False) -> bytes:
    """The (decompressed) records bytes of the batch at pos. transient=True: the caller
    only reads them before its thread's next such call (scratch_decompress), and may get
    a read-only memoryview."""
    view = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    codec = h.compression
    if codec == NONE:
        return bytes(view)
    try:
        if transient:
            return decompress_transient(codec, view, max_decompressed)
        return decompress(codec, view, max_decompressed)
    except DecodeError as e:
        raise CorruptRecordsError(f"batch at offset {h.base_offset}: {e}") from None


def varint_slow(data: bytes, p: int, end: int) -> tuple[int, int]:
    try:
        return decode_varint(data, p, end, 10)
    except DecodeError as e:
        raise CorruptRecordsError(f"bad varint in record: {e}") from None


def decode_headers(data: bytes, p: int, rec_end: int) -> tuple[list, int]:
    count, p = varint_slow(data, p, rec_end)
    if count < 0 or count > rec_end - p:
        raise CorruptRecordsError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        n, p = varint_slow(data, p, rec_end)
        if n < 0 or p + n > rec_end:
            raise CorruptRecordsError(f"invalid header key length {n}")
        try:
            hk = str(data[p:p + n], "utf-8")      # data may be bytes or a memoryview
        except UnicodeDecodeError:
            raise CorruptRecordsError("header key is not valid UTF-8") from None
        p += n
        n, p = varint_slow(data, p, rec_end)
        if n < -1 or p + n > rec_end:
            raise CorruptRecordsError(f"invalid header value length {n}")
        if n == -1:
            hv = None
        else:
            hv = data[p:p + n]
            p += n
        headers.append((hk, hv))
    return headers, p
