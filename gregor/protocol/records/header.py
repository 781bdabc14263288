"""The 61-byte header of a v2 record batch (magic 2), read and patched without decoding records.

Layout (offsets in bytes): base_offset int64 @0, batch_length int32 @8 (bytes after this field),
partition_leader_epoch int32 @12, magic int8 @16, crc uint32 @17 (CRC-32C of everything from
attributes to the end), attributes int16 @21, last_offset_delta int32 @23, base_timestamp int64 @27,
max_timestamp int64 @35, producer_id int64 @43, producer_epoch int16 @51, base_sequence int32 @53,
records_count int32 @57. Legacy message sets (magic 0/1) also carry their magic at byte 16, which
is how a reader tells the formats apart.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from ..primitives import DecodeError

HEADER_SIZE = 61
LOG_OVERHEAD = 12          # base_offset + batch_length: bytes before the length-counted part
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_LEN = struct.Struct(">qi")

# attributes bits
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08   # 0 = CreateTime, 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Parse a v2 batch header at pos. Raises DecodeError when fewer than 61 bytes remain or
    the magic is not 2 (use peek_magic first to route legacy message sets)."""
    if len(buf) - pos < HEADER_SIZE:
        raise DecodeError(f"record batch header needs {HEADER_SIZE} bytes, {len(buf) - pos} left")
    h = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if h.magic != 2:
        raise DecodeError(f"expected record batch magic 2, got {h.magic}")
    if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise DecodeError(f"batch length {h.batch_length} is smaller than a batch header")
    return h


def peek_magic(buf, pos: int = 0) -> int:
    if len(buf) - pos < MAGIC_OFFSET + 1:
        raise DecodeError("too few bytes to read a magic byte")
    return struct.unpack_from(">b", buf, pos + MAGIC_OFFSET)[0]


def entry_size(buf, pos: int = 0) -> int | None:
    """Size of the batch or legacy message starting at pos (12 + length field), or None if
    fewer than 12 bytes remain. Works for every magic since both formats share this prefix."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = _LEN.unpack_from(buf, pos)
    if length < 0:
        raise DecodeError(f"negative batch length {length}")
    return length + LOG_OVERHEAD


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C over attributes..end of the batch at pos spanning size bytes."""
    return crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + size])


def crc_ok(buf, pos: int, h: BatchHeader) -> bool:
    return compute_crc(buf, pos, h.size) == h.crc


def iter_headers(buf):
    """Yield (pos, header) for each complete v2 batch in buf; stop at a partial tail."""
    pos, n = 0, len(buf)
    while n - pos >= HEADER_SIZE:
        h = parse_header(buf, pos)
        if pos + h.size > n:
            return
        yield pos, h
        pos += h.size


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Assign offsets in place. base_offset is outside the CRC, so the CRC stays valid."""
    _BASE_OFFSET.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """Stamp the leader epoch a leader appended the batch in (outside the CRC too)."""
    _I32.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray, pos: int, size: int, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with max_timestamp = timestamp_ms and recompute its CRC."""
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(buf, pos + 35, timestamp_ms)
    _U32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))
