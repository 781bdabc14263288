"""NetworkClient against a scripted in-process broker: negotiation, correlation ids,
pipelining, timeouts, reconnect backoff, bootstrap rotation, frame limits."""
from __future__ import annotations

import socket
import struct

import pytest

from gregor.client.errors import (CorrelationIdMismatchError, KafkaConnectionError,
                                  KafkaTimeoutError)
from gregor.client.network import NetworkClient

from tests.client.fake_broker import NO_REPLY, FakeBroker, RawBytes, WrongCorrelation


@pytest.fixture
def make_broker():
    made = []

    def make(*args, **kwargs):
        b = FakeBroker(*args, **kwargs)
        made.append(b)
        return b
    yield make
    for b in made:
        b.close()


@pytest.fixture
def make_client():
    made = []

    def make(**conf):
        conf.setdefault("request.timeout.ms", 5000)
        c = NetworkClient(conf)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def test_negotiates_highest_common_version(make_broker, make_client):
    b = make_broker(versions={"ApiVersions": (0, 3), "Metadata": (0, 5), "Produce": (3, 7)},
                    topics={"t": 2})
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    assert net.api_version(None, "Metadata") == 5
    assert net.api_version(None, "Produce") == 7
    assert net.api_version(None, "Fetch") is None  # not advertised: unsupported
    md = net.refresh_metadata(["t"])
    assert md.partitions_for("t") == [0, 1]
    assert ("Metadata", 5) in b.requests


def test_api_versions_falls_back_when_broker_only_knows_old_versions(make_broker, make_client):
    b = make_broker(max_api_versions=1,
                    versions={"ApiVersions": (0, 1), "Metadata": (0, 1)}, topics={"t": 1})
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    md = net.refresh_metadata(["t"])
    assert md.partitions_for("t") == [0]
    # Asked at our highest first, was told 35 with the broker's table, then asked at 1.
    assert b.api_versions_asked[0] > 1
    assert b.api_versions_asked[-1] == 1
    assert ("Metadata", 1) in b.requests


def test_request_returns_handler_body(make_broker, make_client):
    b = make_broker(lambda api, v, body: {"throttle_time_ms": 0, "error_code": 0,
                                          "producer_id": 42, "producer_epoch": 3})
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    resp = net.request(None, "InitProducerId", {"transactional_id": None,
                                                "transaction_timeout_ms": 1000})
    assert (resp["producer_id"], resp["producer_epoch"]) == (42, 3)


def test_correlation_mismatch_fails_the_connection(make_broker, make_client):
    b = make_broker(lambda api, v, body: WrongCorrelation(
        {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1, "producer_epoch": 0}, 999999))
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    with pytest.raises(CorrelationIdMismatchError, match="correlation id 999999"):
        net.request(None, "InitProducerId", {"transactional_id": None,
                                             "transaction_timeout_ms": 1000})
    assert not any(net.is_connected(n) for n in (-1,))


def test_request_timeout_closes_connection(make_broker, make_client):
    b = make_broker(lambda api, v, body: NO_REPLY)
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    with pytest.raises(KafkaTimeoutError):
        net.request(None, "InitProducerId", {"transactional_id": None,
                                             "transaction_timeout_ms": 1000}, timeout=0.3)
    assert net.in_flight_count() == 0


def test_pipelining_is_bounded_by_max_in_flight(make_broker, make_client):
    b = make_broker(lambda api, v, body: NO_REPLY)
    net = make_client(**{"bootstrap.servers": b.bootstrap,
                         "max.in.flight.requests.per.connection": 3})
    net.api_version(-1, "InitProducerId")  # connect and negotiate
    sent = 0
    for _ in range(10):
        if not net.ready(-1):
            break
        net.send(-1, "InitProducerId", {"transactional_id": None,
                                        "transaction_timeout_ms": 1})
        sent += 1
    assert sent == 3
    assert net.in_flight_count(-1) == 3


def test_pipelined_responses_complete_in_order(make_broker, make_client):
    counter = iter(range(100))
    b = make_broker(lambda api, v, body: {"throttle_time_ms": 0, "error_code": 0,
                                          "producer_id": next(counter), "producer_epoch": 0})
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    net.api_version(-1, "InitProducerId")
    reqs = [net.send(-1, "InitProducerId", {"transactional_id": None,
                                            "transaction_timeout_ms": 1}) for _ in range(5)]
    done = []
    for _ in range(200):
        done += net.poll(0.05)
        if len(done) == 5:
            break
    assert [r.correlation_id for r in done] == [r.correlation_id for r in reqs]
    assert [r.body["producer_id"] for r in done] == [0, 1, 2, 3, 4]


def test_bootstrap_rotation_skips_dead_address(make_broker, make_client):
    b = make_broker(topics={"t": 1})
    net = make_client(**{"bootstrap.servers": f"127.0.0.1:{dead_port()},{b.bootstrap}",
                         "reconnect.backoff.ms": 10})
    md = net.refresh_metadata(["t"], timeout=5)
    assert md.leader_for("t", 0) == 1


def test_unreachable_cluster_raises_connection_error(make_client):
    net = make_client(**{"bootstrap.servers": f"127.0.0.1:{dead_port()}",
                         "reconnect.backoff.ms": 10})
    with pytest.raises(KafkaConnectionError, match="bootstrap.servers"):
        net.request(None, "Metadata", {"topics": []}, timeout=0.5)


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_reconnect_backoff_grows_with_jitter_and_caps():
    clock = FakeClock()
    net = NetworkClient({"bootstrap.servers": f"127.0.0.1:{dead_port()}",
                         "reconnect.backoff.ms": 100, "reconnect.backoff.max.ms": 400},
                        clock=clock)
    try:
        delays = []
        for _ in range(5):
            assert not net.ready(-1, clock.t)      # starts a connect attempt
            for _ in range(100):                   # the refused connect shows up on poll
                net.poll(0.01)
                if net.connection_delay(-1, clock.t) > 0:
                    break
            delays.append(net.connection_delay(-1, clock.t))
            clock.t += 10.0                        # past any backoff
        expected = [0.1, 0.2, 0.4, 0.4, 0.4]
        for d, e in zip(delays, expected):
            assert 0.8 * e <= d <= 1.2 * e, (delays, expected)
    finally:
        net.close()


def test_oversized_frame_closes_connection_without_allocating(make_broker, make_client):
    # A peer announcing a 2 GiB frame must be refused, not trusted.
    b = make_broker(lambda api, v, body: RawBytes(struct.pack(">i", 0x7FFFFFF0) + b"x" * 8))
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    with pytest.raises(KafkaConnectionError, match="receive.message.max.bytes"):
        net.request(None, "InitProducerId", {"transactional_id": None,
                                             "transaction_timeout_ms": 1}, timeout=2)


def test_send_many_runs_in_parallel_and_keeps_order(make_broker, make_client):
    b1 = make_broker(lambda api, v, body: {"throttle_time_ms": 0, "error_code": 0,
                                           "producer_id": 1, "producer_epoch": 0})
    b2 = make_broker(lambda api, v, body: NO_REPLY)
    net = make_client(**{"bootstrap.servers": b1.bootstrap})
    net2 = make_client(**{"bootstrap.servers": b2.bootstrap})
    out = net.send_many([(None, "InitProducerId", {"transactional_id": None,
                                                   "transaction_timeout_ms": 1}, None)] * 2)
    assert [o["producer_id"] for o in out] == [1, 1]
    out2 = net2.send_many([(None, "InitProducerId", {"transactional_id": None,
                                                     "transaction_timeout_ms": 1}, None)],
                          timeout=0.3)
    assert isinstance(out2[0], KafkaTimeoutError)


def test_disconnect_fails_in_flight_and_requests_metadata(make_broker, make_client):
    b = make_broker(lambda api, v, body: NO_REPLY, topics={"t": 1})
    net = make_client(**{"bootstrap.servers": b.bootstrap})
    net.refresh_metadata(["t"])
    assert not net.metadata.needs_update(net.clock())
    net.api_version(1, "InitProducerId")
    req = net.send(1, "InitProducerId", {"transactional_id": None, "transaction_timeout_ms": 1})
    b.drop_connections()
    for _ in range(100):
        net.poll(0.02)
        if req.done:
            break
    assert req.done and isinstance(req.error, KafkaConnectionError)
    assert net.metadata.needs_update(net.clock())


def test_idle_connection_is_closed_and_reopened_on_demand(make_broker):
    clock = FakeClock()
    b = make_broker(lambda api, v, body: {"throttle_time_ms": 0, "error_code": 0,
                                          "producer_id": 3, "producer_epoch": 0})
    net = NetworkClient({"bootstrap.servers": b.bootstrap, "connections.max.idle.ms": 1000},
                        clock=clock)
    try:
        body = {"transactional_id": None, "transaction_timeout_ms": 1}
        assert net.request(None, "InitProducerId", body)["producer_id"] == 3
        assert net.is_connected(-1)
        clock.t += 2.0
        net.poll(0)
        assert not net.is_connected(-1)
        assert net.connection_delay(-1, clock.t) == 0      # no backoff: nothing failed
        assert net.request(None, "InitProducerId", body)["producer_id"] == 3
    finally:
        net.close()


def test_a_throttled_broker_gets_nothing_until_the_throttle_time_passed(make_broker):
    """KIP-219, as Kafka's NetworkClient: a response whose version makes the client throttle
    itself pauses sends to that broker for throttle_time_ms; older versions do not."""
    body = {"throttle_time_ms": 400, "error_code": 0, "producer_id": 1, "producer_epoch": 0}
    b = make_broker(lambda api, v, req: body)
    now = [1000.0]
    net = NetworkClient({"bootstrap.servers": b.bootstrap, "request.timeout.ms": 5000},
                        clock=lambda: now[0])
    try:
        node = -1
        net.api_version(node, "InitProducerId")          # connect and negotiate
        net.request(node, "InitProducerId", {"transactional_id": None,
                                             "transaction_timeout_ms": 1000}, version=0)
        assert net.ready(node)              # v0: throttle_time_ms meant "already delayed"
        net.request(node, "InitProducerId", {"transactional_id": None,
                                             "transaction_timeout_ms": 1000}, version=1)
        assert not net.ready(node)          # v1+: the client holds back itself
        assert net.connection_delay(node, now[0]) == pytest.approx(0.4)
        assert net.least_loaded_node(now[0]) != node
        now[0] += 0.39
        assert not net.ready(node)
        now[0] += 0.02
        assert net.ready(node) and net.connection_delay(node, now[0]) == 0.0
    finally:
        net.close()
