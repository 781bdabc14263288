"""Legacy message sets (magic 0 and 1), and conversion to and from v2 batches.

A message set is a sequence of entries: offset int64, message size int32, message. A message is
crc uint32 (CRC-32 of everything after it), magic int8, attributes int8 (bits 0-2 compression,
bit 3 LogAppendTime in magic 1), timestamp int64 (magic 1 only), key bytes, value bytes
(int32 length, -1 = null).

Compression wraps a whole message set inside the value of one "wrapper" message. Inner offsets
in magic 1 are relative (0, 1, ...) and the wrapper carries the absolute offset of the last
inner message; in magic 0 inner messages carry absolute offsets themselves. LZ4 in magic 0
uses Kafka's old, broken frame header checksum (see compression.py).

Conversions: `up_convert` turns a message set from an old producer into one v2 batch;
`down_convert` turns v2 batches into a message set for an old fetcher (headers are dropped,
control batches skipped: neither exists in those formats). `decode_any` reads the data records
of any mix of v2 batches and message sets (what a log written by old and new producers holds).
"""
from __future__ import annotations

import struct
import zlib

from ..compression import DEFAULT_MAX_DECOMPRESSED, LZ4, NONE, ZSTD, compress, decompress
from ..errors import UnsupportedCompressionTypeError
from ..primitives import DecodeError
from .batch import (CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, Record, decode_batch,
                    decode_batches, encode_batch)
from .header import LOG_OVERHEAD, MAGIC_OFFSET
from .errors import CorruptRecordsError, InvalidRecordsError

_ENTRY = struct.Struct(">qi")          # offset, message size
_CRC_MAGIC_ATTRS = struct.Struct(">Ibb")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TS_TYPE_BIT = 0x08
# crc + magic + attributes + key length + value length (+ timestamp in magic 1)
_MIN_MESSAGE = (14, 22)


class LegacyMessage:
    """One magic 0/1 message (inner messages of compressed wrappers are returned flat)."""

    __slots__ = ("offset", "timestamp", "key", "value", "magic", "timestamp_type", "compression")

    def __init__(self, offset: int, timestamp: int | None, key: bytes | None,
                 value: bytes | None, magic: int = 1, timestamp_type: int = CREATE_TIME,
                 compression: int = NONE):
        self.offset = offset
        self.timestamp = NO_TIMESTAMP if timestamp is None or magic == 0 else timestamp
        self.key = key
        self.value = value
        self.magic = magic
        self.timestamp_type = timestamp_type
        self.compression = compression     # codec of the wrapper it came in (0 = none)

    def to_record(self) -> Record:
        return Record(self.offset, self.timestamp, self.key, self.value, [],
                      self.timestamp_type)

    def __eq__(self, other):
        if not isinstance(other, LegacyMessage):
            return NotImplemented
        return (self.offset, self.timestamp, self.key, self.value, self.magic) == \
            (other.offset, other.timestamp, other.key, other.value, other.magic)

    def __repr__(self) -> str:
        return (f"LegacyMessage(offset={self.offset}, timestamp={self.timestamp}, "
                f"key={self.key!r}, value={self.value!r}, magic={self.magic})")


# ---------------------------------------------------------------------------------------------
# decoding


def _read_bytes(msg: bytes, p: int) -> tuple[bytes | None, int]:
    if len(msg) - p < 4:
        raise CorruptRecordsError("message ends inside a length field")
    n = _I32.unpack_from(msg, p)[0]
    p += 4
    if n == -1:
        return None, p
    if n < 0 or n > len(msg) - p:
        raise CorruptRecordsError(f"message field length {n} does not fit the message")
    return msg[p:p + n], p + n


def decode_message_set(buf, *, verify_crc: bool = True,
                       max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                       allow_partial: bool = True) -> list[LegacyMessage]:
    """Every message in a magic 0/1 message set, wrappers unpacked. A partial entry at the
    end (fetch responses may cut one) is skipped with allow_partial."""
    return _decode(bytes(buf), verify_crc, max_decompressed, allow_partial, nested=False)


def _decode(buf: bytes, verify_crc: bool, max_decompressed: int, allow_partial: bool,
            nested: bool) -> list[LegacyMessage]:
    out: list[LegacyMessage] = []
    pos, n = 0, len(buf)
    while pos < n:
        if n - pos < 12:
            if allow_partial:
                break
            raise CorruptRecordsError(f"{n - pos} trailing bytes are not a message")
        offset, size = _ENTRY.unpack_from(buf, pos)
        if size < _MIN_MESSAGE[0]:
            raise CorruptRecordsError(f"message size {size} is smaller than a message")
        if pos + 12 + size > n:
            if allow_partial:
                break
            raise CorruptRecordsError(f"message at offset {offset} needs {size} bytes, "
                                      f"{n - pos - 12} present")
        msg = buf[pos + 12:pos + 12 + size]
        pos += 12 + size
        crc, magic, attrs = _CRC_MAGIC_ATTRS.unpack_from(msg, 0)
        if magic not in (0, 1):
            raise CorruptRecordsError(f"message at offset {offset} has magic {magic} inside "
                                      f"a magic 0/1 message set")
        if size < _MIN_MESSAGE[magic]:
            raise CorruptRecordsError(f"message size {size} is too small for magic {magic}")
        if verify_crc and zlib.crc32(memoryview(msg)[4:]) != crc:
            raise CorruptRecordsError(f"CRC mismatch in message at offset {offset}")
        p = 6
        ts_type = CREATE_TIME
        timestamp = NO_TIMESTAMP
        if magic == 1:
            timestamp = _I64.unpack_from(msg, p)[0]
            p += 8
            if attrs & _TS_TYPE_BIT:
                ts_type = LOG_APPEND_TIME
        key, p = _read_bytes(msg, p)
        value, p = _read_bytes(msg, p)
        if p != len(msg):
            raise CorruptRecordsError(f"message at offset {offset} has {len(msg) - p} bytes "
                                      f"after its value")
        codec = attrs & 0x07
        if codec >= ZSTD:
            raise CorruptRecordsError(f"message at offset {offset} uses compression codec "
                                      f"{codec}, which magic {magic} messages cannot carry")
        if codec == NONE:
            out.append(LegacyMessage(offset, timestamp, key, value, magic, ts_type))
            continue
        if nested:
            raise CorruptRecordsError("compressed message inside a compressed message")
        if value is None:
            raise CorruptRecordsError(f"compressed wrapper at offset {offset} has no value")
        try:
            inner_bytes = decompress(codec, value, max_decompressed, lenient_lz4_checksum=True)
        except DecodeError as e:
            raise CorruptRecordsError(f"wrapper at offset {offset}: {e}") from None
        inner = _decode(inner_bytes, verify_crc, max_decompressed, False, nested=True)
        if not inner:
            raise InvalidRecordsError(f"compressed wrapper at offset {offset} holds no messages")
        # magic 1: absolute = wrapper offset - last relative + relative. A producer's wrapper
        # may carry offset 0, making that negative: then inner offsets are used as they are.
        shift = offset - inner[-1].offset if magic == 1 else 0
        if shift < 0:
            shift = 0
        for m in inner:
            m.offset += shift
            m.compression = codec
            if magic == 1 and ts_type == LOG_APPEND_TIME:
                m.timestamp = timestamp
                m.timestamp_type = LOG_APPEND_TIME
        out.extend(inner)
    return out


# ---------------------------------------------------------------------------------------------
# encoding


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | None, value: bytes | None) -> bytes:
    """One message set entry (offset, size, message)."""
    parts = [struct.pack(">bb", magic, attributes)]
    if magic == 1:
        parts.append(_I64.pack(timestamp))
    for field in (key, value):
        if field is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_I32.pack(len(field)))
            parts.append(bytes(field))
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return _ENTRY.pack(offset, len(body) + 4) + struct.pack(">I", crc) + body


def _as_message(m, magic: int) -> LegacyMessage:
    if isinstance(m, LegacyMessage):
        return m
    if isinstance(m, Record):
        return LegacyMessage(m.offset, m.timestamp, m.key, m.value, magic, m.timestamp_type)
    offset, timestamp, key, value = m    # (offset, timestamp, key, value)
    return LegacyMessage(offset, timestamp, key, value, magic)


def encode_message_set(messages, magic: int, compression: int = NONE, *,
                       log_append_time_ms: int | None = None) -> bytes:
    """A message set from LegacyMessage / Record / (offset, timestamp, key, value) items.
    With compression, all messages go into one wrapper whose offset is the last one's.
    log_append_time_ms (magic 1) marks the set LogAppendTime with that timestamp."""
    if magic not in (0, 1):
        raise ValueError(f"legacy message sets have magic 0 or 1, not {magic}")
    if compression >= ZSTD:
        raise ValueError(f"compression codec {compression} needs record format magic 2; "
                         f"magic {magic} message sets support none, gzip, snappy and lz4")
    msgs = [_as_message(m, magic) for m in messages]
    ts_attr = _TS_TYPE_BIT if (magic == 1 and log_append_time_ms is not None) else 0

    def ts(m):
        if magic == 0:
            return NO_TIMESTAMP
        return log_append_time_ms if log_append_time_ms is not None else m.timestamp

    if compression == NONE:
        return b"".join(encode_message(m.offset, magic, ts_attr, ts(m), m.key, m.value)
                        for m in msgs)
    if not msgs:
        return b""
    first = msgs[0].offset
    inner = b"".join(
        encode_message(m.offset - first if magic == 1 else m.offset, magic, ts_attr, ts(m),
                       m.key, m.value)
        for m in msgs)
    payload = compress(compression, inner, legacy_lz4_checksum=(magic == 0 and compression == LZ4))
    wrapper_ts = ts(msgs[0]) if log_append_time_ms is not None else max(ts(m) for m in msgs)
    return encode_message(msgs[-1].offset, magic, compression | ts_attr, wrapper_ts, None, payload)


# ---------------------------------------------------------------------------------------------
# conversion


def up_convert(message_set, *, base_offset: int = 0, compression: int | None = None,
               producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1) -> bytes:
    """One v2 batch holding every message of a magic 0/1 message set (old produce clients).
    Offsets become base_offset, base_offset + 1, ...; magic 0 messages get no timestamp (-1).
    compression None keeps the codec the messages came in."""
    msgs = decode_message_set(message_set, allow_partial=False)
    if not msgs:
        raise InvalidRecordsError("message set holds no messages")
    if compression is None:
        compression = next((m.compression for m in msgs if m.compression), NONE)
    log_append = all(m.timestamp_type == LOG_APPEND_TIME for m in msgs)
    return encode_batch([(m.timestamp, m.key, m.value, None) for m in msgs],
                        base_offset=base_offset, compression=compression,
                        log_append_time=log_append, producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=base_sequence)


def down_convert(v2_bytes, magic: int, *, compression: int | None = None) -> bytes:
    """A magic 0/1 message set with the records of the v2 batches in v2_bytes (old fetchers).
    Each batch becomes plain messages, or one wrapper when it is compressed (compression None
    keeps each batch's codec; zstd batches raise UnsupportedCompressionTypeError unless
    another compression is given). Headers are dropped; control batches are skipped."""
    if magic not in (0, 1):
        raise ValueError(f"down-conversion targets magic 0 or 1, not {magic}")
    parts = []
    for batch in decode_batches(v2_bytes):
        if batch.is_control or not batch.records:
            continue
        codec = batch.compression if compression is None else compression
        if codec >= ZSTD:
            # as Kafka does: old fetchers cannot read zstd, and silently recompressing would
            # hide the cost; the caller may pass another compression explicitly
            raise UnsupportedCompressionTypeError(
                f"batch at offset {batch.base_offset} is zstd-compressed; magic {magic} "
                f"fetchers cannot read zstd (fetch v10+ can)")
        msgs = [LegacyMessage(r.offset, r.timestamp, r.key, r.value, magic, r.timestamp_type)
                for r in batch.records]
        lat = batch.max_timestamp if (magic == 1 and batch.timestamp_type == LOG_APPEND_TIME) \
            else None
        parts.append(encode_message_set(msgs, magic, codec, log_append_time_ms=lat))
    return b"".join(parts)


def decode_any(buf, *, verify_crc: bool = True, include_control: bool = False,
               max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list[Record]:
    """Data records from any mix of v2 batches and magic 0/1 message sets, in order. Control
    batches are skipped unless include_control; a partial entry at the end is ignored."""
    out: list[Record] = []
    pos, n = 0, len(buf)
    while n - pos > MAGIC_OFFSET:
        size = struct.unpack_from(">i", buf, pos + 8)[0] + LOG_OVERHEAD
        if size < LOG_OVERHEAD + 5:
            raise CorruptRecordsError(f"entry length {size - LOG_OVERHEAD} is too small")
        if pos + size > n:
            break
        magic = buf[pos + MAGIC_OFFSET]
        if magic == 2:
            batch = decode_batch(buf, pos, verify_crc=verify_crc,
                                 max_decompressed=max_decompressed)
            if include_control or not batch.header.is_control:
                out.extend(batch.records)
        elif magic in (0, 1):
            for m in decode_message_set(buf[pos:pos + size], verify_crc=verify_crc,
                                        max_decompressed=max_decompressed):
                out.append(m.to_record())
        else:
            raise CorruptRecordsError(f"unknown record format magic {magic}")
        pos += size
    return out
