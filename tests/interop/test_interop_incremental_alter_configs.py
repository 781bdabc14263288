"""IncrementalAlterConfigs judged by confluent-kafka's AdminClient.incremental_alter_configs and
kafka-python's alter_configs (which uses it when the broker offers it): topics and groups."""
from __future__ import annotations

import pytest

ck_admin = pytest.importorskip("confluent_kafka.admin",
                               reason="confluent-kafka is a test dependency")
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,  # noqa: E402
                                   ConfigResource, ResourceType)

from gregor.testing import Broker  # noqa: E402

pytestmark = pytest.mark.interop


def _entry(name, value, op):
    return ConfigEntry(name, value, incremental_operation=op)


def _described(admin, rtype, name) -> dict:
    [f] = admin.describe_configs([ConfigResource(rtype, name)]).values()
    return {k: c.value for k, c in f.result(timeout=30).items()}


def test_confluent_kafka_incremental_alter_configs_on_topics_and_groups():
    with Broker() as broker:
        broker.create_topic("iac", config={"retention.ms": "60000"})
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        res = ConfigResource(ResourceType.TOPIC, "iac", incremental_configs=[
            _entry("cleanup.policy", "compact", AlterConfigOpType.APPEND),
            _entry("segment.bytes", "2097152", AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([res]).values():
            f.result(timeout=30)
        d = _described(admin, ResourceType.TOPIC, "iac")
        assert d["cleanup.policy"] == "delete,compact" and d["segment.bytes"] == "2097152"
        assert d["retention.ms"] == "60000"                 # untouched, unlike AlterConfigs

        bad = ConfigResource(ResourceType.TOPIC, "iac", incremental_configs=[
            _entry("retention.ms", "1", AlterConfigOpType.APPEND)])
        with pytest.raises(KafkaException) as e:
            for f in admin.incremental_alter_configs([bad]).values():
                f.result(timeout=30)
        assert e.value.args[0].name() == "INVALID_REQUEST"

        group = ConfigResource(ResourceType.GROUP, "queue-1", incremental_configs=[
            _entry("share.auto.offset.reset", "earliest", AlterConfigOpType.SET),
            _entry("share.record.lock.duration.ms", "20000", AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([group]).values():
            f.result(timeout=30)
        d = _described(admin, ResourceType.GROUP, "queue-1")
        assert d["share.auto.offset.reset"] == "earliest"
        assert d["share.record.lock.duration.ms"] == "20000"

        too_short = ConfigResource(ResourceType.GROUP, "queue-1", incremental_configs=[
            _entry("share.record.lock.duration.ms", "10", AlterConfigOpType.SET)])
        with pytest.raises(KafkaException) as e:
            for f in admin.incremental_alter_configs([too_short]).values():
                f.result(timeout=30)
        assert e.value.args[0].name() == "INVALID_CONFIG"
        assert {r.version for r in broker.requests("IncrementalAlterConfigs")} == {1}


def test_kafka_python_alter_configs_goes_incremental():
    kadmin = pytest.importorskip("kafka.admin", reason="kafka-python is a test dependency")
    with Broker() as broker:
        broker.create_topic("iac-kp", config={"retention.ms": "60000"})
        admin = kadmin.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            res = kadmin.ConfigResource(kadmin.ConfigResourceType.TOPIC, "iac-kp",
                                        configs={"segment.bytes": "2097152",
                                                 "retention.ms": (kadmin.AlterConfigOp.DELETE,
                                                                  None)})
            out = admin.alter_configs([res], raise_on_unknown=False)
            assert out == {"topic": {"iac-kp": "OK"}}, out
        finally:
            admin.close()
        assert broker.requests("IncrementalAlterConfigs"), "kafka-python used AlterConfigs"
        cfg = broker.run_on_loop(lambda b: dict(b.store.get("iac-kp").configs))
        assert cfg == {"segment.bytes": "2097152"}
