"""How a broker throttles, on the wire (KIP-219): a response with throttle_time_ms at once and
the connection muted for new request versions, the response held back for old ones, a
throttled consumer's fetch answered without data, and no quota work at all without quotas.

Times are only ever checked from below (a muted connection cannot be answered before the
throttle time has passed); a slow machine only makes them longer.
"""
from __future__ import annotations

import itertools
import socket
import struct
import time

import pytest

from gregor.client.admin import AdminClient
from gregor.protocol import messages
from gregor.protocol.header import decode_response, encode_request
from gregor.protocol.records.batch import encode_batch
from tests.faults import frames
from tests.support.broker import BrokerProcess

QUOTA = 10_000                 # bytes/s: a 14 kB request is throttled ~0.4 s (2 x 1 s windows)
SLACK = 0.05                   # the mute starts just before the response leaves the broker
_corr = itertools.count(1)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("throttling") / "data",
                      settings={"quota.window.num": 2, "quota.window.size.seconds": 1})
    with b:
        with AdminClient({"bootstrap.servers": b.bootstrap}) as admin:
            admin.create_topics(["throttled", "fetched"])
            admin.alter_client_quotas([
                ({"client-id": "new-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "old-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "acks0-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "consumer"}, {"consumer_byte_rate": QUOTA}),
            ])
        yield b


def batch(size: int) -> bytes:
    return encode_batch([(int(time.time() * 1000), None, b"v" * size, None)])


def produce(client_id: str, version: int, value_size: int, acks: int = 1,
            topic: str = "throttled") -> bytes:
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch(value_size)}]}]}
    return encode_request(messages.api("Produce"), version, next(_corr), client_id, body)


def read(s: socket.socket, api: str, version: int) -> dict:
    (size,) = struct.unpack(">i", frames.recv_exact(s, 4))
    return decode_response(messages.api(api), version, frames.recv_exact(s, size))[1]


def test_new_versions_answer_at_once_then_the_connection_is_muted(broker):
    with frames.connect(broker.port) as s:
        s.sendall(produce("new-producer", 7, 14_000))
        first = read(s, "Produce", 7)
        answered = time.monotonic()
        throttle = first["throttle_time_ms"]
        assert first["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert throttle > 0
        # the next request is not even read until the throttle time is over
        s.sendall(produce("new-producer", 7, 10))
        read(s, "Produce", 7)
        assert time.monotonic() - answered >= throttle / 1000 - SLACK


def test_old_versions_get_the_response_held_back(broker):
    with frames.connect(broker.port) as s:
        sent = time.monotonic()
        s.sendall(produce("old-producer", 5, 14_000))
        resp = read(s, "Produce", 5)
        assert resp["throttle_time_ms"] > 0          # "your response was delayed this long"
        assert time.monotonic() - sent >= resp["throttle_time_ms"] / 1000 - SLACK


def test_acks0_produce_mutes_without_a_response(broker):
    with frames.connect(broker.port) as s:
        s.sendall(produce("acks0-producer", 7, 14_000, acks=0))
        sent = time.monotonic()
        s.sendall(frames.api_versions_v0(99))         # answered once the mute is over
        (size,) = struct.unpack(">i", frames.recv_exact(s, 4))
        frames.recv_exact(s, size)
        assert time.monotonic() - sent >= 0.3         # (14 kB - 10 kB) / 10 kB/s ~ 0.4 s


def fetch(client_id: str, offset: int = 0, topic: str = "fetched") -> bytes:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                     "log_start_offset": -1, "current_leader_epoch": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return encode_request(messages.api("Fetch"), 11, next(_corr), client_id, body)


def test_a_throttled_consumer_gets_no_data(broker):
    with frames.connect(broker.port) as s:
        for i in range(10):                       # 10 batches of 3 kB, no quota
            s.sendall(produce("writer", 7, 3000, topic="fetched"))
            assert read(s, "Produce", 7)["throttle_time_ms"] == 0
        # the fetch size is capped at what the quota allows in one window (10 kB), so the
        # first fetch is within the quota and the second is not
        s.sendall(fetch("consumer"))
        first = read(s, "Fetch", 11)
        data = first["responses"][0]["partitions"][0]["records"]
        assert 0 < len(data) <= QUOTA
        assert first["throttle_time_ms"] == 0
        s.sendall(fetch("consumer"))
        second = read(s, "Fetch", 11)
        assert second["throttle_time_ms"] > 0 and second["responses"] == []
