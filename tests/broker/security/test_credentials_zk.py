"""SCRAM credentials of a cluster in ZooKeeper, in Kafka's layout: znodes written by
kafka-configs work, a change made through one broker reaches the others, other keys of a user's
config (quotas) are kept, `gregor users --zookeeper` works with the brokers down."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient

from gregor.broker.entity_configs.names import desanitize, sanitize
from gregor.broker.security.credentials_zk import ZkCredentials
from gregor.security.scram import SCRAM_SHA_256, SCRAM_SHA_512, credential_from_password
from tests.support.broker import REPO_ROOT
from tests.support.cluster import BrokerCluster
from tests.support.sasl_wire import connect, login

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("name, sanitized", [
    ("alice", "alice"), ("a b", "a%20b"), ("a*b", "a%2Ab"), ("a+b", "a%2Bb"),
    ("a/b", "a%2Fb"), ("é", "%C3%A9"), ("a~b", "a%7Eb"), ("x.y-z_w", "x.y-z_w"),
    ("CN=x,O=y", "CN%3Dx%2CO%3Dy")])
def test_sanitize_as_kafka(name, sanitized):
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


@pytest.fixture
def zk(zk_connect):
    hosts, _, chroot = zk_connect.partition("/")
    client = KazooClient(hosts=hosts)
    client.start(10)
    client.ensure_path("/" + chroot)
    client.chroot = "/" + chroot
    yield client
    client.stop()
    client.close()


def kafka_configs_write(zk, user: str, password: str, mechanisms=(SCRAM_SHA_256,),
                        extra: dict | None = None) -> None:
    """What `kafka-configs --zookeeper ... --alter --add-config SCRAM-SHA-256=[...]` writes."""
    config = dict(extra or {})
    for m in mechanisms:
        config[m.name] = credential_from_password(m, password, 4096).to_text()
    zk.ensure_path("/config/users")
    zk.ensure_path("/config/changes")
    path = f"/config/users/{sanitize(user)}"
    body = json.dumps({"version": 1, "config": config}).encode()
    if zk.exists(path):
        zk.set(path, body)
    else:
        zk.create(path, body)
    zk.create("/config/changes/config_change_", json.dumps(
        {"version": 2, "entity_path": f"users/{sanitize(user)}"}).encode(), sequence=True)


def test_store_keeps_other_keys_and_notifies(zk, zk_connect):
    zk.ensure_path("/config/users")
    zk.create("/config/users/eve", json.dumps(
        {"version": 1, "config": {"producer_byte_rate": "1024"}}).encode())
    store = ZkCredentials.connect(zk_connect)
    try:
        cred = credential_from_password(SCRAM_SHA_512, "pw")
        store.write_user_configs({"eve": {"SCRAM-SHA-512": cred.to_text()},
                                  "a b": {"SCRAM-SHA-512": cred.to_text()}})
        doc = json.loads(zk.get("/config/users/eve")[0])
        assert doc == {"version": 1, "config": {"producer_byte_rate": "1024",
                                                "SCRAM-SHA-512": cred.to_text()}}
        assert zk.exists("/config/users/a%20b")
        notes = sorted(zk.get_children("/config/changes"))
        bodies = [json.loads(zk.get(f"/config/changes/{n}")[0]) for n in notes]
        assert {"version": 2, "entity_path": "users/eve"} in bodies
        assert {"version": 2, "entity_path": "users/a%20b"} in bodies
        assert store.wait_for(lambda s: s.credential("eve", "SCRAM-SHA-512") == cred)
        store.write_user_configs({"eve": {}})          # SCRAM keys gone, quota kept
        assert json.loads(zk.get("/config/users/eve")[0])["config"] == \
            {"producer_byte_rate": "1024"}
        assert store.wait_for(lambda s: s.credential("eve", "SCRAM-SHA-512") is None)
    finally:
        store.close()


def _sasl_cluster(root, zk_connect) -> BrokerCluster:
    return BrokerCluster(root, zk_connect, size=2, session_ms=6000, settings={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"})


def _logs_in(b, user, password, mech="SCRAM-SHA-256") -> bool:
    with connect(b.listeners["SASL_PLAINTEXT"]) as c:
        return login(c, mech, user, password)["error_code"] == 0


def test_cluster_users_from_kafka_configs_and_from_any_broker(tmp_path, zk_connect, zk):
    kafka_configs_write(zk, "alice", "alice-secret", extra={"consumer_byte_rate": "2048"})
    with _sasl_cluster(tmp_path, zk_connect) as cluster:
        b0, b1 = cluster.brokers
        assert _logs_in(b0, "alice", "alice-secret") and _logs_in(b1, "alice", "alice-secret")
        assert not _logs_in(b1, "alice", "wrong")
        # a user created through broker 0 (KIP-554) logs in on broker 1 within a second
        with connect(b0.port) as c:
            salt = b"z" * 16
            body = c.request("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [
                {"name": "bob", "mechanism": 2, "iterations": 4096, "salt": salt,
                 "salted_password": SCRAM_SHA_512.salted_password("bob-pw", salt, 4096)}]})
            assert body["results"] == [{"user": "bob", "error_code": 0, "error_message": None}]
        written = time.monotonic()
        cluster.wait_for(lambda: _logs_in(b1, "bob", "bob-pw", "SCRAM-SHA-512"), 10,
                         "bob's credential on broker 1")
        assert time.monotonic() - written < 1.5
        # kafka-configs changes alice's password while the brokers run
        kafka_configs_write(zk, "alice", "new-secret")
        cluster.wait_for(lambda: _logs_in(b0, "alice", "new-secret") and
                         _logs_in(b1, "alice", "new-secret"), 10, "alice's new password")
        # describe through broker 1 sees both users; the quota key stayed in alice's znode
        with connect(b1.port) as c:
            body = c.request("DescribeUserScramCredentials", 0, {"users": None})
        assert [r["user"] for r in body["results"]] == ["alice", "bob"]
        # a broker killed and restarted reads them back from ZooKeeper
        b1.kill()
        cluster.wait_for(lambda: 1 not in cluster.registered(), 30,
                         "broker 1's ZooKeeper session to expire")
        b1.start()
        assert _logs_in(b1, "bob", "bob-pw", "SCRAM-SHA-512")


def test_gregor_users_zookeeper_with_the_brokers_down(tmp_path, zk_connect):
    pw = tmp_path / "pw"
    pw.write_text("carol-pw\n")
    cmd = [sys.executable, "-m", "gregor", "users", "add", "carol", "--password-file", str(pw),
           "--zookeeper", zk_connect]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    listed = subprocess.run([sys.executable, "-m", "gregor", "users", "list", "--zookeeper",
                             zk_connect], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=60)
    assert "user-principal 'carol' are SCRAM-SHA-256=iterations=4096, " \
           "SCRAM-SHA-512=iterations=4096" in listed.stdout
    with _sasl_cluster(tmp_path / "c", zk_connect) as cluster:
        assert _logs_in(cluster.brokers[0], "carol", "carol-pw", "SCRAM-SHA-512")
