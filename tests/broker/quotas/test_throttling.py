"""How a broker throttles, on the wire (KIP-219): a response with throttle_time_ms at once and
the connection muted for new request versions, the response held back for old ones, a
throttled consumer's fetch answered without data; request_percentage, controller_mutation_rate
(with kafka-python's and confluent-kafka's admin clients) and connection_creation_rate.

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
                      settings={"quota.window.num": 2, "quota.window.size.seconds": 1,
                                "controller.quota.window.num": 2})
    with b:
        with AdminClient({"bootstrap.servers": b.bootstrap}) as admin:
            admin.create_topics(["throttled", "fetched"])
            admin.alter_client_quotas([
                ({"client-id": "new-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "old-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "acks0-producer"}, {"producer_byte_rate": QUOTA}),
                ({"client-id": "consumer"}, {"consumer_byte_rate": QUOTA}),
                ({"client-id": "busy"}, {"request_percentage": 0.01}),
                # burst: 2 windows x 1 s x 5/s = 10 partitions
                ({"client-id": "kp-admin"}, {"controller_mutation_rate": 5}),
                ({"client-id": "ck-admin"}, {"controller_mutation_rate": 5}),
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


def metadata(client_id: str) -> bytes:
    body = {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    return encode_request(messages.api("Metadata"), 8, next(_corr), client_id, body)


def test_request_percentage_throttles_a_busy_client(broker):
    """0.01% of the broker's time is 100 us a second: a few Metadata requests exceed it."""
    with frames.connect(broker.port) as s:
        for _ in range(200):
            s.sendall(metadata("busy"))
            throttle = read(s, "Metadata", 8)["throttle_time_ms"]
            if throttle:
                break
        assert throttle > 0
        assert throttle <= 1000                  # bounded by one quota window, as Kafka's
        answered = time.monotonic()
        s.sendall(metadata("busy"))
        read(s, "Metadata", 8)
        assert time.monotonic() - answered >= throttle / 1000 - SLACK
    with frames.connect(broker.port) as s:       # another client id is not affected
        s.sendall(metadata("idle"))
        assert read(s, "Metadata", 8)["throttle_time_ms"] == 0


def test_kafka_python_admin_gets_throttling_quota_exceeded(broker):
    """kafka-python sends CreateTopics v7 (strict): once the bucket is empty, topics fail."""
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="kp-admin")
    try:
        result = admin.create_topics([NewTopic("kp-a", 6, 1), NewTopic("kp-b", 6, 1),
                                      NewTopic("kp-c", 6, 1)], raise_errors=False)
        codes = {t["name"]: t["error_code"] for t in result["topics"]}
        assert codes == {"kp-a": 0, "kp-b": 0, "kp-c": 89}     # THROTTLING_QUOTA_EXCEEDED
        assert {t["name"]: t["num_partitions"] for t in result["topics"]}["kp-a"] == 6
    finally:
        admin.close()


def test_confluent_admin_old_version_is_throttled_not_refused(broker):
    """librdkafka sends CreateTopics v4 (permissive): every topic is created."""
    from confluent_kafka.admin import AdminClient as CkAdmin, NewTopic
    admin = CkAdmin({"bootstrap.servers": broker.bootstrap, "client.id": "ck-admin"})
    futures = admin.create_topics([NewTopic(f"ck-{i}", 6, 1) for i in range(3)],
                                  operation_timeout=10)
    for f in futures.values():
        f.result(timeout=30)                     # raises on an error
    md = admin.list_topics(timeout=10)
    assert all(f"ck-{i}" in md.topics for i in range(3))


def test_connection_creation_rate_closes_connections_over_it(broker):
    def answered() -> bool:
        with frames.connect(broker.port) as s:
            try:
                s.sendall(frames.api_versions_v0(1))
                (size,) = struct.unpack(">i", frames.recv_exact(s, 4))
                frames.recv_exact(s, size)
                return True
            except (ConnectionError, OSError):
                return False               # held unread, then closed
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.alter_client_quotas([({"ip": "127.0.0.1"}, {"connection_creation_rate": 2})])
    try:
        # 2/s over 2 x 1 s windows: a burst of connections goes over it
        results = [answered() for _ in range(6)]
        assert results[0] and not all(results)
    finally:
        deadline = time.monotonic() + 30
        while True:                      # our own admin connection may be refused a while
            try:
                with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
                    admin.alter_client_quotas(
                        [({"ip": "127.0.0.1"}, {"connection_creation_rate": None})],
                        timeout=5)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
    assert answered()
