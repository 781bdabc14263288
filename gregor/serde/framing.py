"""Confluent's wire framing: magic byte 0, the schema's global id as 4 bytes big-endian, then
the payload. Protobuf payloads start with the message's index path in its file: a zigzag
varint count then zigzag varint indexes, where the common [0] (the file's first message) is
the single byte 0x00."""
from __future__ import annotations

import struct

from .errors import NotFramedError, SerializationError

MAGIC = 0
HEADER = struct.Struct(">bI")
HEADER_SIZE = HEADER.size
# A message nested deeper than this is not a real .proto: refuse instead of looping on
# hostile bytes.
MAX_INDEX_DEPTH = 64


def frame(schema_id: int, payload: bytes, indexes: list[int] | None = None) -> bytes:
    """payload framed for schema_id (and Protobuf message indexes when given)."""
    head = HEADER.pack(MAGIC, schema_id)
    if indexes is None:
        return head + payload
    return head + encode_indexes(indexes) + payload


def header(schema_id: int) -> bytes:
    return HEADER.pack(MAGIC, schema_id)


def parse(data) -> tuple[int, memoryview]:
    """(schema id, payload) of framed bytes, or NotFramedError saying what is wrong."""
    if data is None:
        raise NotFramedError("null value: nothing to decode")
    if len(data) < HEADER_SIZE:
        raise NotFramedError(f"{len(data)} bytes is shorter than the 5-byte Confluent header "
                             "(magic byte 0 + 4-byte schema id)")
    magic, schema_id = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise NotFramedError(f"unknown magic byte {magic & 0xff}: not Confluent-framed "
                             "(expected 0 then a 4-byte schema id)")
    return schema_id, memoryview(data)[HEADER_SIZE:]


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _write_varint(out: bytearray, n: int) -> None:
    n &= 0xFFFFFFFFFFFFFFFF
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def encode_indexes(indexes: list[int]) -> bytes:
    if list(indexes) == [0]:
        return b"\x00"
    out = bytearray()
    _write_varint(out, _zigzag(len(indexes)))
    for i in indexes:
        _write_varint(out, _zigzag(i))
    return bytes(out)


def _read_varint(buf, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise SerializationError("truncated varint in the Protobuf message indexes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise SerializationError("varint over 10 bytes in the Protobuf message indexes")
    return (result >> 1) ^ -(result & 1), pos


def decode_indexes(buf, pos: int = 0) -> tuple[list[int], int]:
    """(message indexes, position after them); [0] for the single byte 0."""
    count, pos = _read_varint(buf, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > MAX_INDEX_DEPTH:
        raise SerializationError(f"Protobuf message index count {count} is out of range "
                                 f"(0..{MAX_INDEX_DEPTH})")
    out = []
    for _ in range(count):
        i, pos = _read_varint(buf, pos)
        out.append(i)
    return out, pos
