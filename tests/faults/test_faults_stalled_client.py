"""Clients that stop mid-frame, or trickle bytes, must not hold up anyone else."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from tests.faults import frames
from tests.faults.checks import assert_alive, real_client_roundtrip, tracebacks

pytestmark = pytest.mark.interop

STALLED = 50  # half-sent frames held open at once while others work
# Under socket.request.max.bytes (100 MiB by default): a size the broker must accept and wait for.
HUGE_DECLARED = 100_000_000


def test_half_sent_frames_do_not_block_other_connections(fault_broker):
    b = fault_broker
    stalled = []
    try:
        for i in range(STALLED):
            s = frames.connect(b.port)
            good = frames.metadata_v1(i + 1, ["stalled"])
            if i % 3 == 0:
                s.sendall(good[:2])                 # half a size prefix
            elif i % 3 == 1:
                s.sendall(good[:len(good) // 2])    # a size prefix and half the request
            else:
                s.sendall(frames.i32(5000) + b"x" * 100)  # promises 5000 bytes, sends 100
            stalled.append(s)
        # Meanwhile, others are served: raw requests and a real client's whole round trip.
        for n in range(20):
            assert_alive(b, corr=n + 1)
        real_client_roundtrip(b.bootstrap, "while-others-stall")
    finally:
        for s in stalled:
            s.close()
    assert_alive(b)


def test_trickling_client_is_served_and_does_not_block_others(fault_broker):
    """A frame arriving one byte at a time is answered once complete; requests on other
    connections are answered in the meantime."""
    b = fault_broker
    slow = frames.connect(b.port)
    try:
        req = frames.api_versions_v0(99)
        for i, byte in enumerate(req):
            slow.sendall(bytes([byte]))
            if i % 4 == 0:
                assert_alive(b, corr=1000 + i)  # another connection, served right away
            time.sleep(0.005)
        corr, body = frames.read_response(slow)
        assert corr == 99 and body[:2] == b"\x00\x00"
    finally:
        slow.close()


def test_client_that_never_reads_its_responses_does_not_block_others(fault_broker):
    """A client that pipelines many requests and never reads: the broker stops reading from it
    when its send buffer fills (back-pressure) and keeps serving everyone else."""
    b = fault_broker
    greedy = frames.connect(b.port)
    try:
        greedy.setblocking(False)
        req = frames.metadata_v1(1)
        sent = 0
        deadline = time.monotonic() + 10
        while sent < 20 << 20 and time.monotonic() < deadline:  # at most 20 MiB of requests
            try:
                sent += greedy.send(req * 50)
            except BlockingIOError:
                break  # our send buffer is full too: the broker stopped reading; good
        for n in range(10):
            assert_alive(b, corr=2000 + n)
        real_client_roundtrip(b.bootstrap, "while-one-never-reads")
    finally:
        greedy.close()
    assert_alive(b)


def _cut_short(port: int, data: bytes, cut: int, reset: bool) -> None:
    """Send data[:cut], then go away: a FIN, or a reset (SO_LINGER 0)."""
    s = frames.connect(port)
    try:
        s.sendall(data[:cut])
        if reset:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        s.close()


def test_frames_cut_short_by_a_disconnect_leave_the_broker_serving_others(fault_broker):
    b = fault_broker
    batch = frames.record_batch([b"v" * 100] * 9000)                  # ~1 MiB
    big = frames.produce_v3(1, "cut-short", 0, batch)
    small = frames.metadata_v1(2, ["cut-short"])
    huge = frames.i32(HUGE_DECLARED) + b"\x00\x03\x00\x01" + b"x" * 70_000
    shapes = [(small, 2), (small, len(small) // 2), (small, len(small) - 1),
              (big, 3), (big, 70_000), (big, len(big) * 2 // 5), (big, len(big) - 1),
              (huge, 10), (huge, len(huge))]
    for round_ in range(3):
        for i, (data, cut) in enumerate(shapes):
            _cut_short(b.port, data, cut, reset=(i + round_) % 2 == 1)
            assert_alive(b, corr=100 * round_ + i)
    # a whole large request after all that is served, and real clients work
    with frames.connect(b.port, timeout=60) as s:
        s.sendall(frames.create_topics_v0(7, "cut-short-whole"))
        frames.read_response(s)
        s.sendall(frames.produce_v3(8, "cut-short-whole", 0, batch))
        corr, body = frames.read_response(s)
    assert corr == 8 and frames.produce_v3_error(body) == 0
    real_client_roundtrip(b.bootstrap, "after-cut-frames")
    assert not tracebacks(b)


def test_huge_declared_frames_trickled_cost_what_arrived_not_what_was_declared(fault_broker):
    """Connections that each declare ~100 MB and send 64 KiB: the broker holds buffers sized
    by what arrived (a few hundred KiB in all), not the gigabyte the size prefixes claim."""
    b = fault_broker
    n = 8
    before = frames.rss_bytes(b.pid)
    held = []
    try:
        for _ in range(n):
            s = frames.connect(b.port)
            s.sendall(frames.i32(HUGE_DECLARED) + b"\x00\x03\x00\x01" + b"x" * 65_536)
            held.append(s)
        for corr in range(3):  # others are served; by now the broker has read the held bytes
            assert_alive(b, corr=corr)
        grown = frames.rss_bytes(b.pid) - before
        assert grown < 64 * 1024 * 1024, (
            f"broker RSS grew by {grown >> 20} MiB for {n} frames declaring "
            f"{HUGE_DECLARED >> 20} MiB each with 64 KiB sent")
    finally:
        for s in held:
            s.close()
    assert_alive(b)
