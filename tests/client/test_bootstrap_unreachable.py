"""No broker at bootstrap.servers: clients say so within gregor.bootstrap.timeout.ms ("could
not connect to HOST:PORT (connection refused)"), instead of a minute of silence and then a
missing topic; a client that was connected once keeps Kafka's retries across a restart."""
from __future__ import annotations

import errno
import socket
import threading

import pytest
from click.testing import CliRunner

from gregor.client.admin import AdminClient
from gregor.client.errors import BrokerNotReachableError, KafkaTimeoutError
from gregor.client.network import NetworkClient
from gregor.client.producer import Producer


def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_never_connected_clients_give_up_and_only_after_the_timeout():
    clock = _Clock()
    net = NetworkClient({"bootstrap.servers": "127.0.0.1:1", "gregor.bootstrap.timeout.ms": 2000},
                        clock=clock)
    try:
        boot = net._bootstrap[0]
        net._connect_failed(boot, clock.now, OSError(errno.ECONNREFUSED, "ECONNREFUSED"))
        clock.now += 1.9
        assert net.unreachable_error() is None              # not yet
        clock.now += 0.2
        err = net.unreachable_error()
        assert isinstance(err, BrokerNotReachableError)
        assert "could not connect to 127.0.0.1:1 (connection refused)" in str(err)
        net.ever_connected = True                           # connected once: Kafka's retries
        assert net.unreachable_error() is None
    finally:
        net.close()


def test_a_negative_timeout_waits_as_kafka_does():
    clock = _Clock()
    net = NetworkClient({"bootstrap.servers": "127.0.0.1:1", "gregor.bootstrap.timeout.ms": -1},
                        clock=clock)
    try:
        net._connect_failed(net._bootstrap[0], clock.now, OSError(errno.ECONNREFUSED, ""))
        clock.now += 3600
        assert net.unreachable_error() is None
    finally:
        net.close()


def test_admin_and_producer_name_the_address_and_the_cause():
    port = _refused_port()
    cfg = {"bootstrap.servers": f"127.0.0.1:{port}", "gregor.bootstrap.timeout.ms": 300}
    with AdminClient(cfg) as admin:
        with pytest.raises(BrokerNotReachableError,
                           match=rf"could not connect to 127\.0\.0\.1:{port} \(connection refused\)"):
            admin.list_topics(timeout=60)
    p = Producer({**cfg, "max.block.ms": 60000})
    try:
        with pytest.raises(BrokerNotReachableError, match="connection refused"):
            p.send("t1", b"v")
    finally:
        p.close(0)


def test_a_missing_topic_is_still_a_missing_topic():
    from gregor.testing import Broker
    with Broker({"auto.create.topics.enable": "false"}) as broker:
        p = Producer({"bootstrap.servers": broker.bootstrap, "max.block.ms": 1000,
                      "gregor.bootstrap.timeout.ms": 300})
        try:
            with pytest.raises(KafkaTimeoutError, match="topic 'nope' not present in metadata"):
                p.send("nope", b"v")
        finally:
            p.close(0)


def test_a_client_connected_once_rides_out_a_restart_longer_than_the_timeout(tmp_path):
    from gregor.testing import Broker
    with Broker(data_dir=tmp_path) as broker:      # a given data_dir: same port after stop
        broker.create_topic("kept")
        with AdminClient({"bootstrap.servers": broker.bootstrap,
                          "gregor.bootstrap.timeout.ms": 100,
                          "reconnect.backoff.max.ms": 100}) as admin:
            assert "kept" in admin.list_topics()
            broker.stop()
            # down for many times the bootstrap timeout, then back on the same port
            restarted = threading.Timer(1.0, broker.start)
            restarted.start()
            try:
                assert "kept" in admin.list_topics(timeout=60)
            finally:
                restarted.join()


def test_the_cli_fails_fast_with_the_cause():
    from gregor.cli.main import cli
    port = _refused_port()
    result = CliRunner().invoke(cli, ["topics", "list", "--bootstrap-server",
                                      f"127.0.0.1:{port}", "--connect-timeout", "0.3"])
    assert result.exit_code == 1, result.output
    assert f"could not connect to 127.0.0.1:{port} (connection refused)" in result.output
