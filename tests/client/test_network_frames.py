"""Request frames in pieces (client/frames.py): a Produce request with large record batches
goes out as buffers that, back to back, are exactly encode_request's bytes; partial sends
resume at the right byte; other requests are plain bytes."""
from __future__ import annotations

import random
import socket

import pytest

from gregor.client.frames import _MAX_PIECES, _PIECE_MIN, FramePieces, request_frame
from gregor.protocol import messages
from gregor.protocol.header import encode_request

PRODUCE = messages.api("Produce")


def produce_body(rnd, sizes):
    topics = []
    for t in range(rnd.randrange(1, 3)):
        parts = [{"index": i, "records": rnd.randbytes(size) if size >= 0 else None}
                 for i, size in enumerate(sizes)]
        topics.append({"name": f"topic-{t}", "partition_data": parts})
    return {"transactional_id": rnd.choice((None, "tx")), "acks": -1, "timeout_ms": 30000,
            "topic_data": topics}


def joined(frame):
    if isinstance(frame, FramePieces):
        return b"".join(bytes(p) for p in frame.parts)
    return frame


@pytest.mark.parametrize("version", [3, 5, 8, 9])
def test_pieces_are_exactly_encode_requests_bytes(version):
    rnd = random.Random(version)
    for sizes in ([10], [_PIECE_MIN - 1], [_PIECE_MIN], [100_000, 5, -1, 70_000],
                  [_PIECE_MIN * 3] * 4):
        body = produce_body(rnd, sizes)
        frame = request_frame(PRODUCE, version, 12345, "client-1", body)
        assert joined(frame) == encode_request(PRODUCE, version, 12345, "client-1", body)
        assert isinstance(frame, FramePieces) == any(s >= _PIECE_MIN for s in sizes)
        assert len(frame) == len(joined(frame))


def test_other_requests_are_plain_bytes():
    api = messages.api("Metadata")
    body = {"topics": None}
    assert request_frame(api, 1, 7, "c", body) == encode_request(api, 1, 7, "c", body)


def test_rest_resumes_at_any_byte_and_caps_the_buffer_count():
    parts = [bytearray(b"head"), b"x" * 10, bytearray(b"mid"), b"y" * 7, bytearray(b"")]
    frame = FramePieces(parts)
    whole = b"".join(bytes(p) for p in parts)
    for pos in range(len(whole) + 1):
        assert b"".join(bytes(p) for p in frame.rest(pos)) == whole[pos:]
    many = FramePieces([b"a"] * (_MAX_PIECES + 10))
    assert len(many.rest(0)) == _MAX_PIECES
    assert len(many.rest(_MAX_PIECES)) == 10


def test_a_large_produce_frame_crosses_a_socket_intact_through_partial_sends():
    """The network layer's _write loop: sendmsg of what is left, resumed after each partial
    send (a small socket buffer forces many)."""
    rnd = random.Random(3)
    body = produce_body(rnd, [300_000, 200_000, 50, 90_000])
    frame = request_frame(PRODUCE, 8, 1, "c", body)
    assert isinstance(frame, FramePieces)
    a, b = socket.socketpair()
    try:
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        a.setblocking(False)
        received = bytearray()
        pos = sends = 0
        while pos < len(frame):
            try:
                pos += a.sendmsg(frame.rest(pos))
                sends += 1
            except BlockingIOError:
                pass
            while True:
                b.setblocking(False)
                try:
                    chunk = b.recv(1 << 16)
                except BlockingIOError:
                    break
                received += chunk
        while len(received) < len(frame):
            received += b.recv(1 << 16)
        assert sends > 1
        assert bytes(received) == encode_request(PRODUCE, 8, 1, "c", body)
    finally:
        a.close()
        b.close()
