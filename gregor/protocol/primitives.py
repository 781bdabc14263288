"""Kafka's primitive wire types: a bounds-checked Reader and an appending Writer.

Everything here is sans-I/O. A Reader never allocates more than the bytes it was given:
every length and count is checked against what remains before anything is built from it,
so hostile input gets a DecodeError, never a huge allocation or an infinite loop.
"""
from __future__ import annotations

import struct
import uuid as _uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")

ZERO_UUID = bytes(16)


class DecodeError(ValueError):
    """Bytes that do not decode as the expected protocol structure."""


def zigzag_encode(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def encode_uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"unsigned varint cannot be negative: {n}")
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    """Zig-zag signed varint (32 or 64 bit; Python ints need no distinction)."""
    return encode_uvarint(zigzag_encode(n) & 0xFFFFFFFFFFFFFFFF)


def decode_uvarint(buf, pos: int, end: int | None = None, max_bytes: int = 10) -> tuple[int, int]:
    """Decode an unsigned varint at pos; returns (value, new_pos).

    max_bytes bounds the loop: 5 bytes for 32-bit varints, 10 for 64-bit ones.
    """
    if end is None:
        end = len(buf)
    result = 0
    shift = 0
    for i in range(max_bytes):
        if pos >= end:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes")


def decode_varint(buf, pos: int, end: int | None = None, max_bytes: int = 10) -> tuple[int, int]:
    v, pos = decode_uvarint(buf, pos, end, max_bytes)
    return zigzag_decode(v), pos


class Reader:
    """Sequential, bounds-checked reader over bytes or a memoryview."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise DecodeError(f"need {n} bytes at offset {p}, only {self.end - p} left")
        self.pos = p + n
        return p

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._need(1))[0]

    def boolean(self) -> bool:
        return self.buf[self._need(1)] != 0

    def int16(self) -> int:
        return _I16.unpack_from(self.buf, self._need(2))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._need(2))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self.buf, self._need(4))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._need(4))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._need(8))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._need(8))[0]

    def uuid(self) -> bytes:
        p = self._need(16)
        return bytes(self.buf[p:p + 16])

    def uvarint(self) -> int:
        v, self.pos = decode_uvarint(self.buf, self.pos, self.end, 5)
        return v

    def varint(self) -> int:
        v, self.pos = decode_varint(self.buf, self.pos, self.end, 5)
        return v

    def varlong(self) -> int:
        v, self.pos = decode_varint(self.buf, self.pos, self.end, 10)
        return v

    def raw(self, n: int) -> bytes:
        p = self._need(n)
        return bytes(self.buf[p:p + n])

    # -- length-prefixed values -------------------------------------------------
    def _length(self, compact: bool) -> int:
        """Returns the length, or -1 for null."""
        if compact:
            return self.uvarint() - 1
        return self.int16()

    def string(self, compact: bool = False, nullable: bool = False) -> str | None:
        n = self._length(compact)
        if n < 0:
            if nullable and n == -1:
                return None
            raise DecodeError(f"invalid string length {n}")
        p = self._need(n)
        try:
            return str(self.buf[p:p + n], "utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not valid UTF-8: {e}") from None

    def bytes_(self, compact: bool = False, nullable: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable and n == -1:
                return None
            raise DecodeError(f"invalid bytes length {n}")
        p = self._need(n)
        return bytes(self.buf[p:p + n])

    def records(self, compact: bool = False) -> bytes | None:
        """A nullable records field (record batches / message sets): a copy of its bytes."""
        return self.bytes_(compact, True)

    def array_count(self, compact: bool = False, nullable: bool = False) -> int:
        """Element count (-1 for null). Never larger than the bytes left, since
        every element of every Kafka array occupies at least one byte."""
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable and n == -1:
                return -1
            raise DecodeError(f"invalid array length {n}")
        if n > self.end - self.pos:
            raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes")
        return n


class ViewReader(Reader):
    """A Reader whose records fields are memoryviews of the buffer, not copies: the broker
    decodes produce requests with it, so the (often 1 MiB) record batches are not copied out
    of the frame. Only for immutable buffers (bytes, or views of bytes): a view must not
    change under whoever keeps it."""

    __slots__ = ()

    def records(self, compact: bool = False) -> memoryview | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if n == -1:
                return None
            raise DecodeError(f"invalid bytes length {n}")
        p = self._need(n)
        return memoryview(self.buf)[p:p + n]


class Writer:
    """Appends encoded primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self):
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def int8(self, v: int):
        self.buf += _I8.pack(v)

    def boolean(self, v: bool):
        self.buf.append(1 if v else 0)

    def int16(self, v: int):
        self.buf += _I16.pack(v)

    def uint16(self, v: int):
        self.buf += _U16.pack(v)

    def int32(self, v: int):
        self.buf += _I32.pack(v)

    def uint32(self, v: int):
        self.buf += _U32.pack(v)

    def int64(self, v: int):
        self.buf += _I64.pack(v)

    def float64(self, v: float):
        self.buf += _F64.pack(v)

    def uuid(self, v):
        if isinstance(v, _uuid.UUID):
            v = v.bytes
        if v is None:
            v = ZERO_UUID
        if len(v) != 16:
            raise ValueError("uuid must be 16 bytes")
        self.buf += v

    def uvarint(self, v: int):
        self.buf += encode_uvarint(v)

    def varint(self, v: int):
        self.buf += encode_varint(v)

    varlong = varint

    def raw(self, b):
        self.buf += b

    def string(self, v: str | None, compact: bool = False, nullable: bool = False):
        if v is None:
            if not nullable:
                raise ValueError("non-nullable string is None")
            self.buf += b"\x00" if compact else b"\xff\xff"
            return
        data = v.encode("utf-8")
        if compact:
            self.buf += encode_uvarint(len(data) + 1)
        else:
            if len(data) > 0x7FFF:
                raise ValueError("string longer than 32767 bytes")
            self.buf += _I16.pack(len(data))
        self.buf += data

    def bytes_(self, v, compact: bool = False, nullable: bool = False):
        if v is None:
            if not nullable:
                raise ValueError("non-nullable bytes is None")
            self.buf += b"\x00" if compact else b"\xff\xff\xff\xff"
            return
        if compact:
            self.buf += encode_uvarint(len(v) + 1)
        else:
            self.buf += _I32.pack(len(v))
        self.buf += v

    def array_count(self, n: int, compact: bool = False):
        """n = -1 writes a null array."""
        if compact:
            self.buf += encode_uvarint(n + 1)
        else:
            self.buf += _I32.pack(n)


class PiecesWriter(Writer):
    """A Writer that keeps bytes fields of min_piece bytes or more (record batches) by
    reference, as pieces of their own, instead of copying them into its buffer: a frame with
    a 1 MiB batch then costs no bytearray growth and no final copy. The pieces go out back to
    back (transport.writelines, socket.sendmsg)."""

    __slots__ = ("pieces", "min_piece")

    def __init__(self, min_piece: int):
        super().__init__()
        self.pieces: list = []
        self.min_piece = min_piece

    def bytes_(self, v, compact: bool = False, nullable: bool = False):
        if v is None or len(v) < self.min_piece:
            return Writer.bytes_(self, v, compact, nullable)
        self.buf += encode_uvarint(len(v) + 1) if compact else _I32.pack(len(v))
        self.pieces += (self.buf, v)
        self.buf = bytearray()

    def sized_pieces(self) -> list:
        """All pieces of a frame written after a 4-byte size placeholder, the size filled
        in (the first piece is always this writer's own bytearray)."""
        parts = self.pieces + [self.buf] if self.buf or not self.pieces else self.pieces
        _I32.pack_into(parts[0], 0, sum(map(len, parts)) - 4)
        return parts
