"""The pytest plugin: fixtures, the gregor_config marker, faults cleared between tests of the
session broker, and an import that does not pull in the broker."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_importing_the_plugin_imports_no_broker():
    code = ("import sys, gregor.testing.plugin, gregor.testing; "
            "import json; print(json.dumps(sorted(m for m in sys.modules if m.startswith('gregor'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == ["gregor", "gregor.testing", "gregor.testing.plugin"]


@pytest.mark.gregor_config({"num.partitions": 3}, clock="manual")
def test_gregor_broker_takes_the_marker(gregor_broker):
    from gregor.testing.wire import WireClient
    assert gregor_broker.clock is not None
    with WireClient(gregor_broker.port) as c:
        topics = c.request("Metadata", 4, {"topics": [{"name": "auto"}],
                                           "allow_auto_topic_creation": True})["topics"]
    assert len(topics[0]["partitions"]) == 3


def test_unique_topic_on_the_session_broker(gregor_broker_session, unique_topic):
    assert unique_topic in gregor_broker_session.topics()
    assert "test_unique_topic_on_the_session_broker" in unique_topic


def test_session_faults_are_cleared_and_bad_markers_refused(tmp_path):
    (tmp_path / "test_two.py").write_text('''
import pytest

def test_a_sets_a_fault(gregor_broker_session):
    gregor_broker_session.faults.push("Metadata", ["LEADER_NOT_AVAILABLE"] * 5)
    gregor_broker_session.limit_versions("Produce", 3)

def test_b_sees_none(gregor_broker_session):
    from gregor.testing.wire import WireClient
    with WireClient(gregor_broker_session.port) as c:
        table = {k["api_key"]: k["max_version"] for k in c.request("ApiVersions", 0, {})["api_keys"]}
        assert table[0] > 3
        topics = c.request("Metadata", 1, {"topics": [{"name": "b"}]})["topics"]
        assert topics[0]["error_code"] == 0

@pytest.mark.gregor_config(["not", "a", "dict"])
def test_bad_marker(gregor_broker):
    pass
''')
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-W", "ignore::DeprecationWarning", str(tmp_path)],
                         capture_output=True, text=True, cwd=str(tmp_path), timeout=300)
    assert "2 passed" in run.stdout and "1 error" in run.stdout, run.stdout[-3000:]
    assert "gregor_config takes one dict of broker settings" in run.stdout


def test_gregor_proxy_fronts_a_broker_that_advertises_it(gregor_proxy):
    from kafka import KafkaProducer
    assert gregor_proxy.bootstrap_servers == gregor_proxy.broker.bootstrap_servers
    gregor_proxy.broker.create_topic("proxied")
    producer = KafkaProducer(bootstrap_servers=gregor_proxy.bootstrap_servers)
    assert producer.send("proxied", b"via the proxy").get(10).offset == 0
    producer.close()
    assert gregor_proxy.broker.requests("Produce")[0].client_id.startswith("kafka-python")


def test_without_zookeeper_one_line_then_skip_or_fail_in_ci(tmp_path, monkeypatch):
    from gregor.broker.cluster import zookeeper_server
    from gregor.testing import Cluster, ZooKeeperMissing
    monkeypatch.setattr(zookeeper_server, "missing_reason",
                        lambda: "java is not installed (apt-get install default-jre-headless)")
    with pytest.raises(ZooKeeperMissing, match="ZooKeeper is needed here: java is not"):
        Cluster(brokers=1)
    (tmp_path / "test_needs_zk.py").write_text(
        "def test_cluster(gregor_cluster):\n    assert gregor_cluster\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "CI"}
    env["PATH"] = str(tmp_path)                        # no java on it
    base = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
            str(tmp_path)]
    user = subprocess.run(base, capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert "1 skipped" in user.stdout and "needs ZooKeeper: java is not installed" in user.stdout
    ours = subprocess.run(base + ["-o", "gregor_require_zookeeper=true"], capture_output=True,
                          text=True, cwd=str(tmp_path), env=dict(env, CI="true"))
    assert "1 error" in ours.stdout and "ZooKeeper is required here" in ours.stdout, ours.stdout
