"""Clients that stop mid-frame, or trickle bytes, must not hold up anyone else."""
from __future__ import annotations

import time

import pytest

from tests.faults import frames
from tests.faults.checks import assert_alive, real_client_roundtrip

pytestmark = pytest.mark.interop

STALLED = 50  # half-sent frames held open at once while others work


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
