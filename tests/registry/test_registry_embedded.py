"""The registry inside the broker's process: gregor.testing, its fixture, `gregor broker`."""
import os
import signal
import subprocess
import sys
import urllib.request

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from gregor.testing import Broker

AVRO = '{"type":"record","name":"E","fields":[{"name":"a","type":"int"}]}'


def test_testing_broker_with_a_registry_keeps_ids_across_restart(tmp_path):
    with Broker(data_dir=tmp_path, schema_registry=True) as b:
        url = b.schema_registry_url
        sid = SchemaRegistryClient({"url": url}).register_schema("e-value", Schema(AVRO))
        b.restart()
        assert b.schema_registry_url == url               # the same URL after a restart
        got = SchemaRegistryClient({"url": url}).get_latest_version("e-value")
        assert (got.schema_id, got.version) == (sid, 1)


def test_plugin_fixture(gregor_schema_registry):
    client = SchemaRegistryClient({"url": gregor_schema_registry.schema_registry_url})
    assert client.register_schema("fx-value", Schema('"string"')) == 1
    assert gregor_schema_registry.bootstrap_servers


def test_broker_command_with_schema_registry_listeners(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gregor", "broker", "--set", "listeners=PLAINTEXT://127.0.0.1:0",
         "--set", f"log.dirs={tmp_path}", "--set", "schema.registry.listeners=http://127.0.0.1:0",
         "--set", "offsets.topic.num.partitions=1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = proc.stdout.readline()
        assert first.startswith("gregor broker ready on "), proc.stderr.read()[-3000:]
        second = proc.stdout.readline()
        assert second.startswith("gregor schema registry ready on http://127.0.0.1:"), \
            proc.stderr.read()[-3000:]
        url = second.split(" on ")[1].strip()
        with urllib.request.urlopen(url + "/config", timeout=60) as resp:
            assert resp.read() == b'{"compatibilityLevel":"BACKWARD"}'
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    assert rc == 0, proc.stderr.read()[-3000:]
