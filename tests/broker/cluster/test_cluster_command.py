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


def test_three_brokers_replicate_and_stop_cleanly(tmp_path):
    why = zk.missing_reason()
    if why:
        unavailable(why)
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "gregor", "cluster", "--brokers", "3",
                             "--port", "0", "--data-dir", str(tmp_path / "c"),
                             "--set", "zookeeper.session.timeout.ms=6000"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
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
