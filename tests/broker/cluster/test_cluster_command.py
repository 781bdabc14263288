"""`gregor cluster`: ZooKeeper and three replicating brokers in one command, stopped by SIGTERM."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
pytestmark = pytest.mark.timeout(180)


def start_cluster(data_dir, *more: str) -> subprocess.Popen:
    """`gregor cluster --brokers 3` on free ports, its output (stdout and stderr) readable."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "gregor", "cluster", "--brokers", "3",
                             "--port", "0", *more, "--data-dir", str(data_dir),
                             "--set", "zookeeper.session.timeout.ms=6000"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_three_brokers_replicate_and_stop_cleanly(tmp_path):
    why = zk.missing_reason()
    if why:
        unavailable(why)
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    proc = start_cluster(tmp_path / "c")
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "gregor cluster ready on" in line:
                break
        m = re.search(r"gregor cluster ready on (\S+)", lines[-1])
        assert m, lines
        bootstrap = m.group(1)
        assert len(bootstrap.split(",")) == 3
        admin = AdminClient({"bootstrap.servers": bootstrap})
        # no replication factor given: the cluster's default.replication.factor (3)
        admin.create_topics([NewTopic("events", 2)])["events"].result(60)
        md = admin.list_topics("events", timeout=30).topics["events"]
        assert all(len(p.replicas) == 3 for p in md.partitions.values())
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(100):
            p.produce("events", str(i).encode(), partition=i % 2)
        assert p.flush(60) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g"})
        c.assign([TopicPartition("events", i, 0) for i in range(2)])
        got = []
        while len(got) < 100:
            got += [m.value() for m in c.consume(100, 10) if not m.error()]
        c.close()
        assert sorted(got, key=int) == [str(i).encode() for i in range(100)]
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, "".join(lines) + rest
    assert all((tmp_path / "c" / f"broker-{i}" / "events-0").is_dir() for i in range(3))


def test_secure_cluster_prints_settings_that_work(tmp_path):
    """--secure: TLS, SCRAM between brokers and for clients, ACLs, ZooKeeper ACLs. The settings
    it prints work as printed: the properties file with a gregor command (--command-config),
    the confluent-kafka dict producing acks=all, the kafka-python dict consuming; nobody gets
    in without them, and ZooKeeper refuses changes from a client without the brokers' login."""
    why = zk.missing_reason()
    if why:
        unavailable(why)
    import json

    from click.testing import CliRunner
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError

    from gregor.cli.main import cli
    proc = start_cluster(tmp_path / "c", "--secure")
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("  Spark:"):
                break
        out = "".join(lines)
        bootstrap = re.search(r"gregor cluster ready on (\S+)", out).group(1)
        assert all(h.startswith("localhost:") for h in bootstrap.split(","))
        properties = re.search(r"--command-config (\S+)", out).group(1)
        confluent = json.loads(re.search(r"confluent-kafka: (\{.*\})", out).group(1))
        kafka_python = json.loads(re.search(r"kafka-python: (\{.*\})", out).group(1))
        assert confluent["bootstrap.servers"] == bootstrap
        zk_port = re.search(r"zookeeper ready on 127.0.0.1:(\d+)", out).group(1)

        result = CliRunner().invoke(cli, ["topics", "create", "orders", "--partitions", "2",
                                          "--replication-factor", "3", "-b", bootstrap,
                                          "--command-config", properties],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        p = Producer({**confluent, "acks": "all"})
        for i in range(100):
            p.produce("orders", str(i).encode(), partition=i % 2)
        assert p.flush(60) == 0
        consumer = KafkaConsumer(**kafka_python, enable_auto_commit=False,
                                 consumer_timeout_ms=20000)
        consumer.assign([TopicPartition("orders", i) for i in range(2)])
        consumer.seek_to_beginning()
        got = []
        for m in consumer:
            got.append(m.value)
            if len(got) == 100:
                break
        consumer.close()
        assert sorted(got, key=int) == [str(i).encode() for i in range(100)]

        wrong = tmp_path / "wrong.properties"
        wrong.write_text(re.sub(r'password="[^"]*"', 'password="not-it"',
                                open(properties).read()))
        refused = CliRunner().invoke(cli, ["topics", "list", "-b", bootstrap,
                                           "--command-config", str(wrong)])
        assert refused.exit_code != 0 and "authentication" in refused.output.lower(), \
            refused.output
        anon = KazooClient(hosts=f"127.0.0.1:{zk_port}/gregor")
        anon.start(10)
        try:
            with pytest.raises(NoAuthError):
                anon.delete("/controller")
            with pytest.raises(NoAuthError):
                anon.get("/config/users/admin")
        finally:
            anon.stop()
            anon.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, "".join(lines) + rest
    secrets = json.loads((tmp_path / "c" / "security" / "secrets.json").read_text())
    logs = "".join((tmp_path / "c" / f"broker-{i}.log").read_text() for i in range(3))
    assert not [s for s in secrets.values() if s in logs]
