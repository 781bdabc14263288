"""AdminClient against a broker: topic lifecycle, configs, offsets, and clear errors."""
from __future__ import annotations

import itertools

import pytest

from gregor import AdminClient
from gregor.client.admin import NewTopic
from gregor.protocol.errors import (InvalidConfigurationError, TopicAlreadyExistsError, UnknownTopicOrPartitionError,
                                    UnsupportedVersionError)

pytestmark = pytest.mark.interop
_seq = itertools.count()


@pytest.fixture
def admin(client_broker):
    with AdminClient({"bootstrap.servers": client_broker.bootstrap}) as a:
        yield a


def name(prefix="admin"):
    return f"{prefix}-{next(_seq)}"


def test_create_list_describe_delete(admin):
    a, b = name(), name()
    assert admin.create_topics([NewTopic(a, 3), b]) == {a: None, b: None}
    topics = admin.list_topics()
    assert {a, b} <= set(topics)
    d = admin.describe_topics([a])[a]
    assert d.num_partitions == 3 and [p.partition for p in d.partitions] == [0, 1, 2]
    assert all(p.leader >= 0 and p.replicas and p.isr for p in d.partitions)
    assert d.replication_factor == 1
    assert admin.describe_topics([b])[b].num_partitions == 1
    admin.delete_topics([b])
    assert b not in admin.list_topics()
    admin.delete_topics([b], ignore_missing=True)


def test_create_existing_topic_is_a_clear_error(admin):
    t = name()
    admin.create_topics([t])
    with pytest.raises(TopicAlreadyExistsError, match=f"'{t}'.*already exists"):
        admin.create_topics([t])
    admin.create_topics([t], ignore_existing=True)


def test_unknown_topic_errors_name_the_topic(admin):
    with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
        admin.describe_topics(["no-such-topic"])
    with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
        admin.delete_topics(["no-such-topic"])


def test_create_partitions_grows_a_topic(admin):
    t = name()
    admin.create_topics([NewTopic(t, 1)])
    admin.create_partitions({t: 4})
    assert admin.describe_topics([t])[t].num_partitions == 4


def test_configs_round_trip(admin):
    t = name()
    admin.create_topics([NewTopic(t, 1, config={"retention.ms": "123456"})])
    configs = admin.describe_configs([t])[t]
    assert configs["retention.ms"].value == "123456"
    assert not configs["retention.ms"].is_default
    try:
        admin.alter_configs({t: {"segment.bytes": "1048576"}})
    except UnsupportedVersionError as e:  # AlterConfigs is optional for a broker
        assert "does not support AlterConfigs" in str(e)
        return
    configs = admin.describe_configs([t])[t]
    assert configs["segment.bytes"].value == "1048576"
    assert configs["retention.ms"].value == "123456"  # merged, not replaced
    admin.alter_configs({t: {"retention.ms": None}})  # None: back to the default
    configs = admin.describe_configs([t])[t]
    assert configs["retention.ms"].is_default and configs["segment.bytes"].value == "1048576"
    with pytest.raises(InvalidConfigurationError, match="no.such.config"):
        admin.alter_configs({t: {"no.such.config": "1"}})


def test_list_offsets_and_cluster(admin, client_broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    t = name()
    admin.create_topics([NewTopic(t, 1)])
    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap})
    for i in range(5):
        p.produce(t, value=b"%d" % i, partition=0, timestamp=1_000 + i)
    assert p.flush(30) == 0
    res = admin.list_offsets({(t, 0): "earliest"})
    assert res[(t, 0)].offset == 0
    assert admin.list_offsets({(t, 0): "latest"})[(t, 0)].offset == 5
    assert admin.list_offsets({(t, 0): 1_003})[(t, 0)].offset == 3
    cluster = admin.describe_cluster()
    assert cluster.brokers and cluster.controller_id in {b.node_id for b in cluster.brokers}
