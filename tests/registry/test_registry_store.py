"""The `_schemas` topic: checked at start, written byte-exact, replayed on restart."""
import os
import signal
import subprocess
import sys

import pytest

from gregor.client.consumer import Consumer
from gregor.registry.server import RegistryThread
from gregor.registry.store import KafkaStore, StoreConfigError

AVRO = '{"type":"record","name":"S","fields":[{"name":"a","type":"int"}]}'


def test_refuses_a_topic_with_several_partitions(broker):
    broker.create_topic("_schemas_parts", partitions=3, config={"cleanup.policy": "compact"})
    store = KafkaStore({"bootstrap.servers": broker.bootstrap_servers}, topic="_schemas_parts")
    with pytest.raises(StoreConfigError, match="3 partitions.*exactly 1"):
        store.start(timeout_s=30)


def test_refuses_a_topic_that_is_not_compacted(broker):
    broker.create_topic("_schemas_delete", partitions=1, config={"cleanup.policy": "delete"})
    store = KafkaStore({"bootstrap.servers": broker.bootstrap_servers}, topic="_schemas_delete")
    with pytest.raises(StoreConfigError, match="cleanup.policy=delete.*compact"):
        store.start(timeout_s=30)


def _records(broker, topic):
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers})
    try:
        c.assign([(topic, 0, -2)])
        end = next(iter(c.end_offsets([(topic, 0)]).values()))
        out = []
        while len(out) < end:
            out += [(r.key, r.value) for r in c.poll(1.0)]
        return out
    finally:
        c.close()


def test_restart_serves_the_same_ids_from_the_log(broker):
    cfg = {"bootstrap.servers": broker.bootstrap_servers}
    topic = "_schemas_restart"
    with RegistryThread(cfg, topic=topic) as r:
        svc = r.registry.service
        a = svc.register("r-a", {"schema": AVRO})
        b = svc.register("r-b", {"schema": '"string"'})
        svc.set_config("r-a", {"compatibility": "FULL"})
        svc.delete_version("r-b", 1)
    recs = _records(broker, topic)
    keys = [k for k, _ in recs]
    # Confluent's key bytes, and the created topic is compacted with one partition
    assert b'{"keytype":"SCHEMA","subject":"r-a","version":1,"magic":1}' in keys
    assert b'{"keytype":"CONFIG","subject":"r-a","magic":0}' in keys
    assert b'{"keytype":"NOOP","magic":0}' in keys               # the leader's catch-up mark
    assert (b'{"keytype":"SCHEMA","subject":"r-b","version":1,"magic":1}',
            b'{"subject":"r-b","version":1,"id":%d,"schema":"\\"string\\"","deleted":true}' % b) \
        in recs
    with RegistryThread(cfg, topic=topic) as r2:
        svc2 = r2.registry.service
        assert svc2.get_version("r-a", 1).id == a
        assert svc2.versions("r-b", deleted=True) == [1] and svc2.subjects() == ["r-a"]
        assert svc2.get_config("r-a") == {"compatibilityLevel": "FULL"}
        # the next id comes after every id in the log
        assert svc2.register("r-c", {"schema": '"bytes"'}) == max(a, b) + 1


def test_cli_prints_the_ready_line(broker):
    proc = subprocess.Popen([sys.executable, "-m", "gregor", "registry", "--bootstrap-server",
                             broker.bootstrap_servers, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert line.startswith("gregor schema registry ready on http://127.0.0.1:"), \
            proc.stderr.read() if not line else line
        import urllib.request
        with urllib.request.urlopen(line.split(" on ")[1].strip() + "/schemas/types",
                                    timeout=60) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        assert rc == 0, proc.stderr.read()[-3000:]
