"""DescribeLogDirs (35): kafka-python's admin describe_log_dirs against a broker process (sizes
equal to the segment files on disk, the file system's total and usable bytes, a request for
named partitions), every version through the handler, a follower's offset lag, and DESCRIBE
on the CLUSTER with the ACL authorizer."""
from __future__ import annotations

import shutil

import pytest

from gregor.protocol.errors import ErrorCode
from gregor.protocol.records.batch import encode_batch
from tests.broker.handler_harness import call, run_broker

kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")


def _log_bytes(partition_dir) -> int:
    return sum(f.stat().st_size for f in partition_dir.glob("*.log"))


def test_kafka_python_describe_log_dirs(shared_broker):
    topic = "log-dirs-kp"
    admin = kafka.KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    producer = kafka.KafkaProducer(bootstrap_servers=shared_broker.bootstrap, linger_ms=5)
    try:
        admin.create_topics([kafka.admin.NewTopic(topic, 2, 1)])
        for i in range(50):
            producer.send(topic, b"value-%03d" % i, partition=0)
        producer.flush(30)
        [answer] = admin.describe_log_dirs()
        [log_dir] = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert log_dir["log_dir"] == str(shared_broker.data_dir.resolve())
        usage = shutil.disk_usage(shared_broker.data_dir)
        # v4 (kafka-python takes the highest both sides speak): the file system's numbers
        assert log_dir["total_bytes"] == usage.total
        assert 0 < log_dir["usable_bytes"] <= usage.total
        parts = {p["partition_index"]: p for t in log_dir["topics"] if t["name"] == topic
                 for p in t["partitions"]}
        assert set(parts) == {0, 1}
        assert parts[0]["partition_size"] == _log_bytes(shared_broker.data_dir / f"{topic}-0")
        assert parts[0]["partition_size"] > 50 * 9
        assert parts[1]["partition_size"] == 0
        assert all(p["offset_lag"] == 0 and p["is_future_key"] is False
                   for p in parts.values())
        [named] = admin.describe_log_dirs(topic_partitions={topic: [1]})
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for t in named["log_dirs"][0]["topics"]] == [(topic, [1])]
    finally:
        producer.close()
        admin.close()


def test_every_version_authorization_and_a_followers_lag(tmp_path):
    async def s(b):
        b.create_topic("t", 2, {})
        p0 = b.replica_manager.get("t", 0)
        p0.append_records_to_leader(bytearray(encode_batch([(0, None, b"x" * 100, [])] * 3)),
                                    1, 0)
        for v in range(5):
            r = await call(b, "DescribeLogDirs", v, {"topics": [{"topic": "t",
                                                                  "partitions": [0, 1, 7]}]})
            [d] = r["results"]
            assert d["error_code"] == 0 and d["log_dir"] == str(tmp_path.resolve())
            assert {p["partition_index"]: p["partition_size"]
                    for p in d["topics"][0]["partitions"]} == {0: p0.log.size_bytes, 1: 0}
            if v >= 4:
                assert d["total_bytes"] > 0 and d["usable_bytes"] > 0
        everything = await call(b, "DescribeLogDirs", 1, {"topics": None})
        assert {t["name"] for t in everything["results"][0]["topics"]} == {"t"}

        # A follower: its lag is the leader's high watermark minus its log end.
        p1 = b.replica_manager.get("t", 1)
        p1.make_follower(leader=5, epoch=1, isr=[0, 5], replicas=[0, 5], zk_version=1)
        lag = await call(b, "DescribeLogDirs", 2, {"topics": [{"topic": "t",
                                                                "partitions": [1]}]})
        assert lag["results"][0]["topics"][0]["partitions"][0]["offset_lag"] == 0  # unknown
        p1.follower_high_watermark(42)
        lag = await call(b, "DescribeLogDirs", 2, {"topics": [{"topic": "t",
                                                                "partitions": [1]}]})
        assert lag["results"][0]["topics"][0]["partitions"][0]["offset_lag"] == 42

    run_broker(tmp_path, s)


def test_describe_on_the_cluster_is_needed(tmp_path):
    """With the ACL authorizer: refused without DESCRIBE on the cluster (v3+ says so; v0-2
    answer no directories), answered with it (tests/broker/security/test_authorization_map.py
    checks the same for every API)."""
    from gregor.broker.security.principal import KafkaPrincipal
    from gregor.protocol.acl import (AccessControlEntry, AclOperation, AclPermissionType,
                                     PatternType, ResourcePattern, ResourceType)
    from tests.broker.handler_harness import As
    alice = As(KafkaPrincipal("User", "alice"), "10.0.0.9")

    async def s(b):
        b.create_topic("t", 1, {})
        denied = await call(b, "DescribeLogDirs", 3, {"topics": None}, alice)
        assert denied["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert denied["results"] == []
        assert (await call(b, "DescribeLogDirs", 0, {"topics": None}, alice))["results"] == []
        cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
        b.authorizer.set_entries(cluster, {AccessControlEntry(
            "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)})
        allowed = await call(b, "DescribeLogDirs", 3, {"topics": None}, alice)
        assert allowed["error_code"] == 0 and allowed["results"][0]["topics"][0]["name"] == "t"
    run_broker(tmp_path, s, authorizer_class_name="kafka.security.authorizer.AclAuthorizer")


def test_advertised_in_api_versions(tmp_path):
    async def s(b):
        r = await call(b, "ApiVersions", 3, {"client_software_name": "t",
                                             "client_software_version": "1"})
        assert {"api_key": 35, "min_version": 0, "max_version": 4} in [
            {k: a[k] for k in ("api_key", "min_version", "max_version")}
            for a in r["api_keys"]]
    run_broker(tmp_path, s)
