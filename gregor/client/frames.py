"""Request frames for the network layer (client/network.py): bytes, or, for a Produce request
carrying large record batches, the same bytes as pieces that go out with one sendmsg().

encode_request copies a 1 MB batch twice into a new frame (~1 ms per request, ~0.13 us per
110-byte record); for the producer that is time of its sender thread, which shares the GIL
with send() (benchmarks/bench_producer_send.py). Pieces keep the batches by reference.
"""
from __future__ import annotations

from ..protocol.header import encode_request, write_request
from ..protocol.primitives import PiecesWriter

# Smaller bytes fields are cheaper to copy than to send as a piece of their own.
_PIECE_MIN = 8192
# sendmsg() takes at most IOV_MAX (1024 on Linux) buffers; the rest goes in the next call.
_MAX_PIECES = 512


class FramePieces:
    """A request frame in pieces (buffers sent back to back)."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list):
        self.parts = parts
        self.size = sum(map(len, parts))

    def __len__(self) -> int:
        return self.size

    def rest(self, pos: int) -> list:
        """The buffers from byte pos on (at most _MAX_PIECES)."""
        out = []
        for part in self.parts:
            n = len(part)
            if pos >= n:
                pos -= n
                continue
            out.append(memoryview(part)[pos:] if pos else part)
            pos = 0
            if len(out) == _MAX_PIECES:
                break
        return out


def request_frame(api, version: int, correlation_id: int, client_id, body):
    """encode_request's bytes, or for a Produce request with large record batches the same
    bytes as FramePieces (tests/client/test_network_frames.py checks they are equal)."""
    if api.name != "Produce":
        return encode_request(api, version, correlation_id, client_id, body)
    w = PiecesWriter(_PIECE_MIN)
    write_request(w, api, version, correlation_id, client_id, body)
    parts = w.sized_pieces()
    return bytes(parts[0]) if len(parts) == 1 else FramePieces(parts)
