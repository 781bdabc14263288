"""`gregor quotas`, shaped like kafka-configs, against a broker process; quotas survive kill -9."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli
from gregor.cli.quotas import entities_from_args
from tests.support.broker import BrokerProcess


def run(args, ok=True):
    result = CliRunner().invoke(cli, ["quotas", *args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code != 0, result.output
    return result.output


def test_entity_types_pair_with_names_in_order():
    got = entities_from_args(["--alter", "--entity-type", "users", "--entity-default",
                              "--entity-type", "clients", "--entity-name", "app"])
    assert got == [("users", None), ("clients", "app")]
    got = entities_from_args(["--entity-type=users", "--entity-name=a b", "--client-defaults"])
    assert got == [("users", "a b"), ("clients", None)]
    assert entities_from_args(["--ip", "10.0.0.1"]) == [("ips", "10.0.0.1")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("quotas-cli") / "data")
    b.start()
    try:
        yield b
    finally:
        b.stop()


def test_alter_describe_delete_and_kill_9(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    out = run(["--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
               "--entity-type", "users", "--entity-name", "alice", *bs])
    assert "Completed updating config for user alice." in out
    out = run(["--alter", "--add-config", "request_percentage=50", "--entity-type", "users",
               "--entity-name", "alice", "--entity-type", "clients", "--entity-default", *bs])
    assert "Completed updating config for user alice." in out
    out = run(["--alter", "--add-config", "connection_creation_rate=1000", "--ip-defaults", *bs])
    assert "Completed updating default config for ips in the cluster." in out
    run(["--alter", "--add-config", "producer_byte_rate=4096", "--client", "app 1", *bs])

    out = run(["--describe", *bs])
    assert "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, " \
           "producer_byte_rate=1048576.0" in out
    assert "Quota configs for user-principal 'alice', the default client-id are " \
           "request_percentage=50.0" in out
    assert "Quota configs for the default ip are connection_creation_rate=1000.0" in out
    assert "Quota configs for client-id 'app 1' are producer_byte_rate=4096.0" in out
    out = run(["--describe", "--entity-type", "users", *bs])      # strict: users only
    assert "alice" in out and "client-id" not in out and "default ip" not in out

    out = run(["--alter", "--add-config", "producer_byte_rate=-5", "--user", "bob", *bs],
              ok=False)
    assert "Quota producer_byte_rate must be greater than 0" in out
    out = run(["--alter", "--add-config", "nonsense=5", "--user", "bob", *bs], ok=False)
    assert "Invalid configuration key nonsense" in out
    out = run(["--alter", "--delete-config", "consumer_byte_rate", "--client", "app 1", *bs],
              ok=False)
    assert "Invalid config(s): consumer_byte_rate" in out
    out = run(["--alter", "--add-config", "producer_byte_rate=1", "--ip", "10.0.0.1", *bs],
              ok=False)
    assert "Invalid configuration key producer_byte_rate" in out

    run(["--alter", "--delete-config", "producer_byte_rate", "--client", "app 1", *bs])
    broker.kill()                     # acknowledged changes are on disk
    broker.start()
    out = run(["--describe", "--bootstrap-server", broker.bootstrap])
    assert "producer_byte_rate=1048576.0" in out and "request_percentage=50.0" in out
    assert "connection_creation_rate=1000.0" in out
    assert "app 1" not in out
