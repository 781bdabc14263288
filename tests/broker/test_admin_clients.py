"""Real admin clients (confluent-kafka, kafka-python) against a gregor broker process:
create/delete topics, partitions, configs, delete records, list offsets."""
import time

import pytest

pytestmark = pytest.mark.interop

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AdminClient, ConfigResource, NewPartitions,  # noqa: E402
                                   NewTopic)


def _admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap})


# AlterConfigs (not the incremental variant, which has no message description yet)
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_admin_lifecycle(gregor_broker_session):
    a = _admin(gregor_broker_session)
    fs = a.create_topics([NewTopic("ck-admin", 2, 1, config={"retention.ms": "3600000"}),
                          NewTopic("ck-admin-rf3", 1, 3)])
    fs["ck-admin"].result(30)
    with pytest.raises(KafkaException) as e:
        fs["ck-admin-rf3"].result(30)
    assert e.value.args[0].code() == ck.KafkaError.INVALID_REPLICATION_FACTOR
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic("ck-admin", 1, 1)])["ck-admin"].result(30)
    assert e.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS

    md = a.list_topics(timeout=30)
    assert sorted(md.topics["ck-admin"].partitions) == [0, 1]
    assert md.topics["ck-admin"].partitions[0].leader == 0

    a.create_partitions([NewPartitions("ck-admin", 4)])["ck-admin"].result(30)
    assert len(a.list_topics("ck-admin", timeout=30).topics["ck-admin"].partitions) == 4

    res = ConfigResource(ConfigResource.Type.TOPIC, "ck-admin")
    cfg = a.describe_configs([res])[res].result(30)
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["segment.bytes"].value == "1073741824"
    res.set_config("retention.ms", "7200000")
    a.alter_configs([res])[res].result(30)
    cfg = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "ck-admin")])
    assert list(cfg.values())[0].result(30)["retention.ms"].value == "7200000"

    a.delete_topics(["ck-admin"])["ck-admin"].result(30)
    for _ in range(50):   # bounded: metadata is immediate on one broker, allow a refresh
        if "ck-admin" not in a.list_topics(timeout=30).topics:
            break
        time.sleep(0.1)
    assert "ck-admin" not in a.list_topics(timeout=30).topics


def test_confluent_delete_records_and_watermarks(gregor_broker_session):
    a = _admin(gregor_broker_session)
    a.create_topics([NewTopic("ck-del", 1, 1)])["ck-del"].result(30)
    p = Producer({"bootstrap.servers": gregor_broker_session.bootstrap, "linger.ms": 0})
    for i in range(10):
        p.produce("ck-del", b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    res = a.delete_records([TopicPartition("ck-del", 0, 4)])
    assert list(res.values())[0].result(30).low_watermark == 4
    c = Consumer({"bootstrap.servers": gregor_broker_session.bootstrap, "group.id": "wm",
                  "auto.offset.reset": "earliest"})
    try:
        assert c.get_watermark_offsets(TopicPartition("ck-del", 0), timeout=30) == (4, 10)
        c.assign([TopicPartition("ck-del", 0, 0)])    # before the log start: reset to earliest
        got = []
        for _ in range(60):
            for m in c.consume(10, 0.5):
                if not m.error():
                    got.append((m.offset(), m.value()))
            if len(got) >= 6:
                break
        assert got == [(i, b"v%d" % i) for i in range(4, 10)]
    finally:
        c.close()


def test_kafka_python_admin(gregor_broker_session):
    from kafka.admin import ConfigResource as KPConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewPartitions as KPNewPartitions
    from kafka.admin import NewTopic as KPNewTopic
    a = KafkaAdminClient(bootstrap_servers=gregor_broker_session.bootstrap)
    try:
        a.create_topics([KPNewTopic("kp-admin", 1, 1, topic_configs={"cleanup.policy": "delete"})])
        assert "kp-admin" in a.list_topics()
        a.create_partitions({"kp-admin": KPNewPartitions(3)})
        (desc,) = a.describe_topics(["kp-admin"])
        assert len(desc["partitions"]) == 3
        (cfg,) = a.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "kp-admin")])
        assert cfg is not None
        a.delete_topics(["kp-admin"])
        assert "kp-admin" not in a.list_topics()
    finally:
        a.close()


def test_confluent_describe_cluster(gregor_broker_session):
    a = _admin(gregor_broker_session)
    desc = a.describe_cluster(request_timeout=30).result(30)
    assert desc.controller.id == 0 and [n.id for n in desc.nodes] == [0]
    assert desc.nodes[0].port == gregor_broker_session.port and desc.cluster_id
