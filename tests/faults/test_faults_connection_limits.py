"""Connection-level limits and ordering: idle timeout, max.connections, socket.request.max.bytes,
and responses in request order on a pipelined connection even when some wait in the purgatory."""
from __future__ import annotations

import struct
import time

import pytest

from tests.faults import frames
from tests.faults.checks import assert_alive
from tests.interop.targets import target_name
from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.skipif(target_name() != "gregor",
                                reason="uses gregor broker settings (--set ...)")

MAX_CONNECTIONS = 20
IDLE_MS = 1500
MAX_REQUEST = 100_000
WAIT_S = 15.0  # upper bound for things that should happen within a second or two


@pytest.fixture(scope="module")
def limited_broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("limits") / "data", settings={
        "max.connections": MAX_CONNECTIONS,
        "connections.max.idle.ms": IDLE_MS,
        "socket.request.max.bytes": MAX_REQUEST,
    }).start()
    try:
        yield b
    finally:
        b.stop()


def test_idle_connection_is_closed(limited_broker):
    with frames.connect(limited_broker.port) as s:
        s.sendall(frames.api_versions_v0(1))
        frames.read_response(s)
        assert frames.closed_by_peer(s, WAIT_S), (
            f"a connection idle for far longer than connections.max.idle.ms={IDLE_MS} stayed open")
    assert_alive(limited_broker)


def test_request_over_socket_request_max_bytes_is_closed_and_under_is_served(limited_broker):
    b = limited_broker
    big = frames.produce_v3(1, "limits", 0, frames.record_batch([b"x" * (MAX_REQUEST + 100)]))
    with frames.connect(b.port) as s:
        try:
            s.sendall(big)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert frames.closed_by_peer(s, WAIT_S), "a frame over socket.request.max.bytes was kept"
    small = frames.produce_v3(2, "limits", 0, frames.record_batch([b"x" * (MAX_REQUEST // 2)]))
    with frames.connect(b.port) as s:
        s.sendall(small)
        corr, _ = frames.read_response(s)
        assert corr == 2
    assert_alive(b)


def test_max_connections_is_enforced_and_freed_slots_are_reused(limited_broker):
    b = limited_broker
    held = []
    try:
        for i in range(MAX_CONNECTIONS):
            # earlier tests' connections may still be counted for a moment: retry briefly
            deadline = time.monotonic() + WAIT_S
            while True:
                s = frames.connect(b.port)
                try:
                    s.settimeout(2.0)
                    s.sendall(frames.api_versions_v0(i))
                    frames.read_response(s)
                    break
                except (OSError, ConnectionError):
                    s.close()
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            held.append(s)
        # One more: Kafka either closes it or leaves it unserved until a slot frees up.
        extra = frames.connect(b.port)
        extra.settimeout(2.0)
        try:
            extra.sendall(frames.api_versions_v0(999))
            served = True
            try:
                frames.read_response(extra)
            except (OSError, ConnectionError):
                served = False
        except OSError:
            served = False
        assert not served, (f"connection {MAX_CONNECTIONS + 1} was served although "
                            f"max.connections={MAX_CONNECTIONS}")
        extra.close()
    finally:
        for s in held:
            s.close()
    # the slots are free again
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            assert_alive(b)
            break
        except (AssertionError, OSError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_pipelined_responses_come_back_in_request_order(limited_broker):
    """Fetches that wait in the purgatory (min_bytes not reached, max_wait 200 ms) interleaved
    with requests answered at once: the responses still come back in request order."""
    b = limited_broker
    topic = "ordering"
    with frames.connect(b.port) as s:
        s.sendall(frames.create_topics_v0(1, topic))
        frames.read_response(s)
        reqs = []
        corr = 100
        for i in range(60):
            corr += 1
            kind = i % 4
            if kind == 0:
                # min_bytes far above what exists: waits max_wait in the purgatory
                part = frames.i32(0) + frames.i64(0) + frames.i32(1 << 20)
                body = (frames.i32(-1) + frames.i32(200) + frames.i32(1 << 20)
                        + frames.i32(1 << 20) + frames.i8(0)
                        + frames.array([frames.string(topic) + frames.array([part])]))
                reqs.append(frames.frame(1, 4, corr, body))
            elif kind == 1:
                reqs.append(frames.api_versions_v0(corr))
            elif kind == 2:
                reqs.append(frames.produce_v3(corr, topic, 0, frames.record_batch([b"o%d" % i])))
            else:
                reqs.append(frames.metadata_v1(corr, [topic]))
        s.sendall(b"".join(reqs))
        s.settimeout(WAIT_S * 4)
        got = [frames.read_response(s)[0] for _ in reqs]
    assert got == list(range(101, 101 + len(reqs))), "responses out of request order"
    assert_alive(b)


def test_acks_0_produce_error_closes_the_connection(limited_broker):
    """acks=0 has no response, so a partition error is signalled by closing the connection."""
    with frames.connect(limited_broker.port) as s:
        s.sendall(frames.create_topics_v0(1, "acks0"))  # one partition: index 7 does not exist
        frames.read_response(s)
        s.sendall(frames.produce_v3(2, "acks0", 7, frames.record_batch([b"v"]), acks=0))
        assert frames.closed_by_peer(s, WAIT_S), (
            "acks=0 produce to a partition that does not exist: connection stayed open")
    assert_alive(limited_broker)


def test_api_versions_lists_what_old_clients_check(limited_broker):
    """Single versions librdkafka before 2.11 and kafka-python look for."""
    with frames.connect(limited_broker.port) as s:
        s.sendall(frames.api_versions_v0(5))
        _, body = frames.read_response(s)
    assert body[:2] == b"\x00\x00"
    (n,) = struct.unpack(">i", body[2:6])
    apis = {}
    for i in range(n):
        k, lo, hi = struct.unpack(">hhh", body[6 + 6 * i:12 + 6 * i])
        apis[k] = (lo, hi)
    need = {0: 3, 1: 4, 2: 1, 3: 4, 22: 0, 18: 0}
    for key, version in need.items():
        assert key in apis and apis[key][0] <= version <= apis[key][1], (
            f"api {key} v{version} not within advertised {apis.get(key)}")
    assert apis[3][0] <= 5 <= apis[3][1], "Metadata v5 must be advertised"
