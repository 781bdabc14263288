"""Three broker processes on a real ZooKeeper: registration, controller election and failover,
topic creation through real admin clients, Metadata on every broker, produce and consume on
partition leaders spread over the brokers. Replication (followers, ISR, acks=all, failover
without loss) has its own tests in test_replication.py."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.support.broker import BrokerProcess
from tests.support.cluster import BrokerCluster
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(three_brokers):
    return three_brokers


def metadata(port: int, topics=None, version: int = 8, create: bool = False) -> dict:
    with WireClient(port) as w:
        return w.request("Metadata", version, {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": create})


def metadata_or_none(port: int) -> dict | None:
    """Metadata, or None from a broker that closes the connection (one refusing requests)."""
    from tests.support.wire import ConnectionClosed
    try:
        return metadata(port)
    except (ConnectionClosed, OSError):
        return None


def create_topic_confluent(bootstrap: str, name: str, partitions: int, rf: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, rf)],
                                 operation_timeout=20, request_timeout=30).values():
        f.result(timeout=60)


def test_brokers_register_with_kafka_json_and_agree_on_controller(cluster):
    c = cluster
    assert c.registered() == [0, 1, 2]
    for b in c.brokers:
        doc = c.json(f"/brokers/ids/{b.broker_id}")
        assert doc["version"] == 5 and doc["host"] == "127.0.0.1" and doc["port"] == b.port
        assert doc["endpoints"] == [f"PLAINTEXT://127.0.0.1:{b.port}"]
        assert doc["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert doc["jmx_port"] == -1 and isinstance(doc["timestamp"], str)
        assert "rack" in doc
    ctrl = c.json("/controller")
    assert ctrl["version"] == 1 and ctrl["brokerid"] in (0, 1, 2)
    assert isinstance(ctrl["timestamp"], str)
    assert c.controller_epoch() >= 1
    cluster_id = c.json("/cluster/id")
    assert cluster_id["version"] == "1"
    for b in c.brokers:
        meta = (b.data_dir / "meta.properties").read_text()
        assert f"broker.id={b.broker_id}\n" in meta
        assert f"cluster.id={cluster_id['id']}\n" in meta
        md = c.wait_for(lambda b=b: (lambda m: m if len(m["brokers"]) == 3 else None)(
            metadata(b.port)), what="every broker listed")
        assert md["controller_id"] == ctrl["brokerid"]
        assert md["cluster_id"] == cluster_id["id"]
        assert sorted((x["node_id"], x["port"]) for x in md["brokers"]) == \
            sorted((x.broker_id, x.port) for x in c.brokers)
        with WireClient(b.port) as w:
            dc = w.request("DescribeCluster", 0, {"include_cluster_authorized_operations": False})
        assert dc["controller_id"] == ctrl["brokerid"] and len(dc["brokers"]) == 3


def test_topic_with_rf3_appears_in_zookeeper_and_every_brokers_metadata(cluster):
    c = cluster
    create_topic_confluent(c.bootstrap, "rf3", 3, 3)
    doc = c.json("/brokers/topics/rf3")
    assert doc["version"] == 3 and isinstance(doc["topic_id"], str)
    assert sorted(doc["partitions"]) == ["0", "1", "2"]
    assert all(sorted(r) == [0, 1, 2] for r in doc["partitions"].values())
    # Round robin: each broker is the first replica (preferred leader) of one partition.
    assert sorted(r[0] for r in doc["partitions"].values()) == [0, 1, 2]
    states = {}
    for p in range(3):
        s = c.json(f"/brokers/topics/rf3/partitions/{p}/state")
        assert s["version"] == 1 and s["leader_epoch"] == 0
        assert s["leader"] == doc["partitions"][str(p)][0]
        assert s["isr"] == doc["partitions"][str(p)]
        assert s["controller_epoch"] == c.controller_epoch()
        states[p] = s
    assert c.json("/config/topics/rf3") == {"version": 1, "config": {}}
    for b in c.brokers:
        def seen(b=b):
            t = metadata(b.port, ["rf3"])["topics"][0]
            return t if t["error_code"] == 0 and len(t["partitions"]) == 3 else None
        t = c.wait_for(seen, what=f"rf3 in broker {b.broker_id}'s Metadata")
        for p in t["partitions"]:
            s = states[p["partition_index"]]
            assert p["leader_id"] == s["leader"] and p["leader_epoch"] == 0
            assert p["replica_nodes"] == doc["partitions"][str(p["partition_index"])]
            assert p["isr_nodes"] == s["isr"] and p["offline_replicas"] == []


def test_kafka_python_admin_creates_topics_through_the_controller(cluster):
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic("kp-rf2", num_partitions=4, replication_factor=2)])
    finally:
        admin.close()
    doc = cluster.json("/brokers/topics/kp-rf2")
    assert len(doc["partitions"]) == 4 and all(len(r) == 2 for r in doc["partitions"].values())


def test_gregor_topics_command_creates_through_the_controller(cluster):
    import subprocess
    import sys
    non_controller = next(b for b in cluster.brokers if b.broker_id != cluster.controller_id())
    out = subprocess.run([sys.executable, "-m", "gregor", "topics", "create", "cli-rf3",
                          "--partitions", "2", "--replication-factor", "3",
                          "--bootstrap-server", non_controller.bootstrap],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = cluster.json("/brokers/topics/cli-rf3")
    assert len(doc["partitions"]) == 2 and all(len(r) == 3 for r in doc["partitions"].values())


def test_topic_configs_go_to_zookeeper_and_every_broker_describes_them(cluster):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic("cfg", 1, 1, config={"retention.ms": "123456"})],
                                 operation_timeout=20).values():
        f.result(timeout=60)
    assert cluster.json("/config/topics/cfg") == {"version": 1,
                                                  "config": {"retention.ms": "123456"}}
    for b in cluster.brokers:
        with WireClient(b.port) as w:
            def described(w=w):
                r = w.request("DescribeConfigs", 1, {"resources": [{
                    "resource_type": 2, "resource_name": "cfg",
                    "configuration_keys": ["retention.ms"]}], "include_synonyms": False})
                return r if r["results"][0]["error_code"] == 0 else None
            r = cluster.wait_for(described, what=f"broker {b.broker_id} knowing 'cfg'")
        assert r["results"][0]["configs"][0]["value"] == "123456"


def test_metadata_auto_creates_through_zookeeper_and_the_controller(cluster):
    from confluent_kafka import Producer
    ctrl = cluster.controller_id()
    other = next(b for b in cluster.brokers if b.broker_id != ctrl)
    first = metadata(other.port, ["auto-made"], create=True)["topics"][0]
    assert first["error_code"] == 5                                 # LEADER_NOT_AVAILABLE

    def ready():
        t = metadata(other.port, ["auto-made"])["topics"][0]
        return t if t["error_code"] == 0 and t["partitions"] and all(
            p["leader_id"] >= 0 for p in t["partitions"]) else None
    t = cluster.wait_for(ready, what="the auto-created topic's leader")
    assert len(t["partitions"]) == 1 and len(t["partitions"][0]["replica_nodes"]) == 1
    state = cluster.json("/brokers/topics/auto-made/partitions/0/state")
    assert state["leader_epoch"] == 0 and state["controller_epoch"] == cluster.controller_epoch()
    with WireClient(other.port) as w:
        r = w.request("Metadata", 4, {"topics": [{"name": "never-made"}],
                                      "allow_auto_topic_creation": False})
    assert r["topics"][0]["error_code"] == 3
    assert cluster.zk.exists("/brokers/topics/never-made") is None
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": 1})
    acked = []
    p.produce("auto-by-producer", b"x", on_delivery=lambda err, m: acked.append(err))
    assert p.flush(60) == 0 and acked == [None]


def test_create_topics_on_a_non_controller_is_not_controller(cluster):
    ctrl = cluster.controller_id()
    other = next(b for b in cluster.brokers if b.broker_id != ctrl)
    with WireClient(other.port) as w:
        resp = w.request("CreateTopics", 4, {"topics": [{
            "name": "elsewhere", "num_partitions": 1, "replication_factor": 1,
            "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert resp["topics"][0]["error_code"] == 41                   # NOT_CONTROLLER
    assert cluster.zk.exists("/brokers/topics/elsewhere") is None
    with WireClient(cluster.by_id(ctrl).port) as w:
        resp = w.request("CreateTopics", 4, {"topics": [{
            "name": "too-many", "num_partitions": 1, "replication_factor": 4,
            "assignments": [], "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert resp["topics"][0]["error_code"] == 38                   # INVALID_REPLICATION_FACTOR


def test_acks1_producer_writes_to_leaders_on_different_brokers_and_consumer_reads(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    c = cluster
    create_topic_confluent(c.bootstrap, "spread", 3, 3)
    leaders = {p: c.json(f"/brokers/topics/spread/partitions/{p}/state")["leader"]
               for p in range(3)}
    assert sorted(leaders.values()) == [0, 1, 2]
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": 1, "linger.ms": 5})
    acked = []
    for i in range(300):
        producer.produce("spread", value=f"v{i}".encode(), partition=i % 3,
                         on_delivery=lambda err, msg: acked.append((err, msg.partition())))
    assert producer.flush(60) == 0
    assert len(acked) == 300 and all(err is None for err, _ in acked)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("spread", p, 0) for p in range(3)])
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + 60
    while sum(map(len, got.values())) < 300 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got[m.partition()].append(m.value())
    consumer.close()
    for p in range(3):
        assert got[p] == [f"v{i}".encode() for i in range(p, 300, 3)]
    # Each leader holds its partition; the other replicas hold nothing yet (no followers).
    for p, leader in leaders.items():
        for b in c.brokers:
            with WireClient(b.port) as w:
                r = w.request("ListOffsets", 1, {"replica_id": -1, "topics": [{
                    "name": "spread", "partitions": [{"partition_index": p,
                                                      "timestamp": -1}]}]})
            part = r["topics"][0]["partitions"][0]
            if b.broker_id == leader:
                assert part["error_code"] == 0 and part["offset"] == 100
            else:
                assert part["error_code"] == 6                      # NOT_LEADER_OR_FOLLOWER


def test_produce_to_a_follower_is_not_leader_or_follower(cluster):
    from gregor.protocol.records.batch import encode_batch
    c = cluster
    create_topic_confluent(c.bootstrap, "one", 1, 2)
    state = c.json("/brokers/topics/one/partitions/0/state")
    replicas = c.json("/brokers/topics/one")["partitions"]["0"]
    follower = next(b for b in replicas if b != state["leader"])
    outsider = next(b.broker_id for b in c.brokers if b.broker_id not in replicas)
    batch = encode_batch([(0, None, b"x", [])])
    for bid in (follower, outsider):
        def produce(bid=bid):
            with WireClient(c.by_id(bid).port) as w:
                return w.request("Produce", 7, {"transactional_id": None, "acks": 1,
                                                "timeout_ms": 5000, "topic_data": [{
                                                    "name": "one", "partition_data": [{
                                                        "index": 0, "records": batch}]}]})
        r = c.wait_for(lambda: (lambda r: r if r["responses"][0]["partition_responses"][0][
            "error_code"] != 3 else None)(produce()), what="topic known everywhere")
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 6
    with WireClient(c.by_id(outsider).port) as w:
        r = w.request("Produce", 7, {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
                                     "topic_data": [{"name": "nope", "partition_data": [{
                                         "index": 0, "records": batch}]}]})
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 3


def test_producer_ids_are_unique_across_brokers(cluster):
    seen = set()
    for b in cluster.brokers:
        with WireClient(b.port) as w:
            for _ in range(3):
                r = w.request("InitProducerId", 1, {"transactional_id": None,
                                                    "transaction_timeout_ms": 60000})
                assert r["error_code"] == 0
                seen.add(r["producer_id"])
    assert len(seen) == 9
    block = cluster.json("/latest_producer_id_block")
    assert block["version"] == 1 and isinstance(block["block_start"], str)
    assert int(block["block_end"]) - int(block["block_start"]) == 999


def test_kill_9_of_the_controller_elects_another_and_moves_its_leaderships(zk_connect, tmp_path):
    with BrokerCluster(tmp_path, zk_connect, size=3) as c:
        c.wait_for(lambda: c.controller_id() != -1, what="a controller")
        create_topic_confluent(c.bootstrap, "fo", 3, 3)
        old, epoch = c.controller_id(), c.controller_epoch()
        led = [p for p in range(3)
               if c.json(f"/brokers/topics/fo/partitions/{p}/state")["leader"] == old]
        assert led
        c.by_id(old).kill()
        c.wait_for(lambda: c.controller_id() not in (-1, old), what="a new controller")
        new = c.controller_id()
        assert c.controller_epoch() == epoch + 1
        assert old not in c.registered()
        for p in led:
            s = c.wait_for(lambda p=p: (lambda s: s if s["leader"] != old else None)(
                c.json(f"/brokers/topics/fo/partitions/{p}/state")), what="a new leader")
            assert s["leader_epoch"] == 1 and old not in s["isr"]
            assert s["controller_epoch"] == epoch + 1
        survivor = next(b for b in c.brokers if b.running)

        def updated():
            md = metadata(survivor.port, ["fo"])
            return md if md["controller_id"] == new and len(md["brokers"]) == 2 else None
        md = c.wait_for(updated, what="Metadata with the new controller")
        for p in md["topics"][0]["partitions"]:
            assert p["leader_id"] != old and p["offline_replicas"] == [old]
        # Back on its data dir, the old leader serves none of the partitions it lost.
        c.by_id(old).start()
        assert c.controller_id() == new
        with WireClient(c.by_id(old).port) as w:
            r = w.request("ListOffsets", 1, {"replica_id": -1, "topics": [{
                "name": "fo", "partitions": [{"partition_index": p, "timestamp": -1}
                                             for p in led]}]})
        assert [x["error_code"] for x in r["topics"][0]["partitions"]] == [6] * len(led)


def test_duplicate_broker_id_and_foreign_data_dir_are_refused(zk_connect, tmp_path,
                                                             zookeeper_server):
    with BrokerCluster(tmp_path, zk_connect, size=1) as c:
        dup = c.new_broker(0, tmp_path / "dup")
        with pytest.raises(RuntimeError) as e:
            dup.start()
        assert "broker.id 0 is already registered" in str(e.value)
        c.brokers[0].stop()
        other = f"{zookeeper_server.hosts}/other-{uuid.uuid4().hex[:8]}"
        foreign = BrokerProcess(c.brokers[0].data_dir, broker_id=0,
                                settings={"zookeeper.connect": other})
        with pytest.raises(RuntimeError) as e:
            foreign.start()
        assert "belongs to cluster" in str(e.value)


def test_sigterm_of_the_controller_hands_over_without_waiting_for_its_session(zk_connect,
                                                                             tmp_path):
    # A long session: the registration being gone right after the exit shows the session
    # was closed, not left to expire.
    with BrokerCluster(tmp_path, zk_connect, size=2, session_ms=30000) as c:
        c.wait_for(lambda: c.controller_id() != -1, what="a controller")
        old = c.controller_id()
        epoch = c.controller_epoch()
        assert c.by_id(old).stop() == 0
        assert old not in c.registered()          # session closed, not left to expire
        c.wait_for(lambda: c.controller_id() not in (-1, old),
                   what="the other broker taking over")
        assert c.controller_epoch() == epoch + 1


def test_paused_controller_is_replaced_then_steps_down_and_rejoins(zk_connect, tmp_path):
    import os
    import signal
    with BrokerCluster(tmp_path, zk_connect, size=3) as c:
        c.wait_for(lambda: c.controller_id() != -1, what="a controller")
        old = c.controller_id()
        epoch = c.controller_epoch()
        paused = c.by_id(old)
        os.kill(paused.pid, signal.SIGSTOP)
        try:
            c.wait_for(lambda: c.controller_id() not in (-1, old), what="a new controller")
        finally:
            os.kill(paused.pid, signal.SIGCONT)
        assert c.controller_epoch() == epoch + 1
        # Back with an expired session: it re-registers under a new one and does not act
        # as controller.
        c.wait_for(lambda: old in c.registered(), what="the paused broker re-registered")
        c.wait_for(lambda: "stops acting as controller" in paused.output(),
                   what="the old controller stepping down")
        assert c.controller_id() != old and c.controller_epoch() == epoch + 1
        # it refuses requests (closes the connection) until the new controller has told it
        # the cluster under its new registration, then answers with that view
        c.wait_for(lambda: (lambda m: m is not None and len(m["brokers"]) == 3 and
                            m["controller_id"] == c.controller_id())(metadata_or_none(paused.port)),
                   what="the paused broker's view refreshed")


def test_restarted_broker_rejoins_and_offline_partition_comes_back(zk_connect, tmp_path):
    with BrokerCluster(tmp_path, zk_connect, size=2) as c:
        # the assignment names broker 1: the controller must already see it registered
        c.wait_for(lambda: c.controller_id() != -1 and len(c.registered()) == 2,
                   what="a controller and both brokers registered")
        with WireClient(c.by_id(c.controller_id()).port) as w:
            r = w.request("CreateTopics", 4, {"topics": [{
                "name": "solo", "num_partitions": -1, "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [1]}], "configs": []}],
                "timeout_ms": 10000, "validate_only": False})
        assert r["topics"][0]["error_code"] == 0
        b1 = c.by_id(1)
        b1.kill()
        s = c.wait_for(lambda: (lambda s: s if s["leader"] == -1 else None)(
            c.json("/brokers/topics/solo/partitions/0/state")), what="partition offline")
        assert s["isr"] == [1] and s["leader_epoch"] == 1        # no unclean election
        md = metadata(c.by_id(0).port, ["solo"])["topics"][0]["partitions"][0]
        assert md["error_code"] == 5 and md["leader_id"] == -1   # LEADER_NOT_AVAILABLE
        assert md["offline_replicas"] == [1]
        c.wait_for(lambda: 1 not in c.registered(), what="broker 1's session to expire")
        b1.start()
        s = c.wait_for(lambda: (lambda s: s if s["leader"] == 1 else None)(
            c.json("/brokers/topics/solo/partitions/0/state")), what="partition back online")
        assert s["leader_epoch"] == 2 and s["isr"] == [1]


def test_replicas_of_topics_deleted_while_a_broker_was_down_are_removed_at_its_start(
        zk_connect, tmp_path):
    """Broker 2 is down while one topic is deleted and another deleted and created again
    (a new topic id, on the live brokers only). At its start both old replicas are stray:
    deleted from its disk, and the recreated topic holds only its new records."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    with BrokerCluster(tmp_path, zk_connect, size=3, session_ms=6000) as c:
        c.wait_for(lambda: c.controller_id() != -1 and len(c.registered()) == 3,
                   what="a controller and three brokers registered")
        for name in ("gone", "again"):
            create_topic_confluent(c.bootstrap, name, 1, 3)
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for i in range(10):
            p.produce("gone", b"old-%d" % i)
            p.produce("again", b"old-%d" % i)
        assert p.flush(30) == 0
        b2 = c.by_id(2)
        c.wait_for(lambda: all((b2.data_dir / f"{t}-0" / "00000000000000000000.log").stat()
                               .st_size > 0 for t in ("gone", "again")),
                   what="broker 2 holding both topics")
        b2.stop()
        c.wait_for(lambda: 2 not in c.registered(), what="broker 2 gone from ZooKeeper")
        live = ",".join(b.bootstrap for b in c.brokers if b.broker_id != 2)
        admin = AdminClient({"bootstrap.servers": live})
        for f in admin.delete_topics(["gone", "again"], operation_timeout=20).values():
            f.result(60)
        c.wait_for(lambda: c.zk.exists("/brokers/topics/again") is None, what="deletion")
        create_topic_confluent(live, "again", 1, 2)
        p = Producer({"bootstrap.servers": live, "acks": "all"})
        for i in range(3):
            p.produce("again", b"new-%d" % i)
        assert p.flush(30) == 0
        assert (b2.data_dir / "gone-0").is_dir() and (b2.data_dir / "again-0").is_dir()
        b2.start()
        c.wait_for(lambda: not (b2.data_dir / "gone-0").exists()
                   and not (b2.data_dir / "again-0").exists(),
                   what="broker 2's stray replicas deleted")
        assert "stray replica" in b2.log_text()
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g",
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("again", 0, 0)])
            got = []
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
            assert got == [b"new-0", b"new-1", b"new-2"]
        finally:
            consumer.close()


def test_unreachable_zookeeper_fails_the_start_with_a_clear_message(tmp_path):
    from gregor.broker.cluster.zookeeper_server import free_port
    b = BrokerProcess(tmp_path / "b", broker_id=0, settings={
        "zookeeper.connect": f"127.0.0.1:{free_port()}/x",
        "zookeeper.connection.timeout.ms": 1000})
    with pytest.raises(RuntimeError) as e:
        b.start()
    assert "could not connect to ZooKeeper" in str(e.value)


def test_gregor_clients_find_leaders_on_different_brokers(cluster):
    from gregor import AdminClient, Consumer, Producer
    from gregor.client.admin import NewTopic
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        admin.create_topics([NewTopic("own", 3, 2)])
    finally:
        admin.close()
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": 1})
    try:
        futs = [p.send("own", value=f"v{i}".encode(), partition=i % 3) for i in range(60)]
        p.flush()
        assert sorted(f.get(30).partition for f in futs) == sorted(i % 3 for i in range(60))
    finally:
        p.close()
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([("own", 0), ("own", 1), ("own", 2)])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 60 and time.monotonic() < deadline:
            got += consumer.poll(0.5) or []
    finally:
        consumer.close()
    assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(60))


def test_delete_topics_on_the_controller_removes_znodes_and_every_replica(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    create_topic_confluent(cluster.bootstrap, "gone", 2, 3)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(20):
        p.produce("gone", b"old-%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    assert all((b.data_dir / "gone-0").is_dir() for b in cluster.brokers)
    others = [b for b in cluster.brokers if b.broker_id != cluster.controller_id()]
    with WireClient(others[0].port) as w:                 # only the controller deletes
        r = w.request("DeleteTopics", 1, {"topic_names": ["gone"], "timeout_ms": 5000})
    assert r["responses"][0]["error_code"] == 41                   # NOT_CONTROLLER
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # finds the controller
    admin.delete_topics(["gone"], operation_timeout=20)["gone"].result(60)
    assert cluster.zk.exists("/brokers/topics/gone") is None
    assert cluster.zk.exists("/config/topics/gone") is None
    assert cluster.zk.exists("/admin/delete_topics/gone") is None
    cluster.wait_for(lambda: not any((b.data_dir / f"gone-{i}").exists()
                                     for b in cluster.brokers for i in range(2)),
                     what="every replica's directory removed")
    for b in cluster.brokers:
        assert metadata(b.port, ["gone"])["topics"][0]["error_code"] == 3   # UNKNOWN_TOPIC
    # the name can be used again, empty
    create_topic_confluent(cluster.bootstrap, "gone", 1, 3)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g"})
    lo, hi = c.get_watermark_offsets(TopicPartition("gone", 0), timeout=30)
    c.close()
    assert (lo, hi) == (0, 0)


def test_create_partitions_on_the_controller_adds_replicated_partitions(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions
    create_topic_confluent(cluster.bootstrap, "grow", 1, 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_partitions([NewPartitions("grow", 3)],
                            operation_timeout=20)["grow"].result(60)
    doc = cluster.json("/brokers/topics/grow")
    assert sorted(doc["partitions"]) == ["0", "1", "2"]
    assert all(len(r) == 3 for r in doc["partitions"].values())
    cluster.wait_for(lambda: all((b.data_dir / "grow-2").is_dir() for b in cluster.brokers),
                     what="every broker hosting the new partitions")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(30):
        p.produce("grow", b"%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "grow"})
    ends = [c.get_watermark_offsets(TopicPartition("grow", i), timeout=30)[1] for i in range(3)]
    c.close()
    assert ends == [10, 10, 10]
    with pytest.raises(Exception, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions("grow", 2)],
                                operation_timeout=20)["grow"].result(60)


def test_alter_configs_reaches_every_broker_and_the_leader_applies_it(cluster):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, ConfigResource
    create_topic_confluent(cluster.bootstrap, "tuned", 1, 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, "tuned",
                         set_config={"min.insync.replicas": "4", "retention.ms": "3600000"})
    admin.alter_configs([res])[res].result(60)
    assert cluster.json("/config/topics/tuned")["config"] == {
        "min.insync.replicas": "4", "retention.ms": "3600000"}

    def described(b):
        with WireClient(b.port) as w:
            r = w.request("DescribeConfigs", 1, {"resources": [{
                "resource_type": 2, "resource_name": "tuned", "configuration_keys": None}],
                "include_synonyms": False})
        return {c["name"]: c["value"] for c in r["results"][0]["configs"]}
    cluster.wait_for(lambda: all(described(b).get("min.insync.replicas") == "4"
                                 for b in cluster.brokers), what="every broker's view")
    out = {}
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": 10000})
    p.produce("tuned", b"x", on_delivery=lambda err, m: out.update(err=err))
    p.flush(30)
    assert out["err"] is not None and out["err"].name() == "NOT_ENOUGH_REPLICAS"

