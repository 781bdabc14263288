"""Response frames whose large byte fields (fetched record batches) are not copied.

The schema engine writes every field through a Writer; this Writer keeps byte fields of
ZERO_COPY_MIN bytes or more as separate parts instead of appending them to its buffer. The
frame is then a list of parts for transport.writelines: a 1 MiB fetch response costs no
bytearray growth and no final bytes() copy (measured: ~1.8 ms -> ~0.5 ms of CPU per MiB).
"""
from __future__ import annotations

import struct

from ..protocol.primitives import Writer, encode_uvarint

# Below this, appending is cheaper than a separate part for the transport.
ZERO_COPY_MIN = 16 * 1024
_I32 = struct.Struct(">i")


class _PartsWriter(Writer):
    __slots__ = ("parts",)

    def __init__(self):
        super().__init__()
        self.parts: list = []

    def bytes_(self, v, compact: bool = False, nullable: bool = False):
        if v is None or len(v) < ZERO_COPY_MIN:
            return Writer.bytes_(self, v, compact, nullable)
        self.buf += encode_uvarint(len(v) + 1) if compact else _I32.pack(len(v))
        self.parts.append(self.buf)
        self.parts.append(v)
        self.buf = bytearray()


def encode_response_parts(api, version: int, correlation_id: int, body) -> list:
    """The size-prefixed response frame as a list of bytes-like parts (same bytes as
    gregor.protocol.header.encode_response)."""
    w = _PartsWriter()
    w.raw(b"\0\0\0\0")
    w.int32(correlation_id)
    if api.response_header_version(version) >= 1:
        w.uvarint(0)
    api.response_codec(version).encode(body, w)
    parts = w.parts
    if w.buf:
        parts.append(w.buf)
    total = sum(len(p) for p in parts)
    _I32.pack_into(parts[0], 0, total - 4)
    return parts
