"""znode JSON bodies against the formats Kafka's ZooKeeper mode writes (Kafka wiki "Kafka data
structures in Zookeeper", KafkaZkClient's znode classes)."""
from __future__ import annotations

import json

from gregor.broker.cluster import znodes as z


def test_broker_registration_has_kafkas_v5_keys_and_types():
    doc = json.loads(z.BrokerInfo(3, "h", 9092, None, 1530000000000).encode())
    assert doc == {"features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                   "endpoints": ["PLAINTEXT://h:9092"], "jmx_port": -1, "port": 9092,
                   "host": "h", "version": 5, "timestamp": "1530000000000", "rack": None}


def test_broker_registration_written_by_kafka_decodes():
    kafka = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
             b'["PLAINTEXT://10.0.0.1:9092"],"jmx_port":9999,"host":"10.0.0.1",'
             b'"timestamp":"1543300074836","port":9092,"version":4}')
    b = z.BrokerInfo.decode(1, kafka)
    assert (b.broker_id, b.host, b.port, b.rack, b.timestamp_ms) == (1, "10.0.0.1", 9092, None,
                                                                     1543300074836)
    # SSL-only brokers write host null / port -1: the endpoint is used instead.
    ssl = b'{"endpoints":["SSL://k1:9093"],"host":null,"port":-1,"version":4,"timestamp":"1"}'
    assert (z.BrokerInfo.decode(2, ssl).host, z.BrokerInfo.decode(2, ssl).port) == ("k1", 9093)


def test_broker_registration_with_named_listeners():
    info = z.BrokerInfo(1, "h", 9092, None, 1, ("CLIENT://h:9092", "REPLICATION://10.0.0.1:9093"))
    doc = json.loads(info.encode())
    assert doc["listener_security_protocol_map"] == {"CLIENT": "PLAINTEXT",
                                                     "REPLICATION": "PLAINTEXT"}
    # host/port: the first listener whose protocol is PLAINTEXT (Kafka's BrokerIdZNode)
    assert (doc["host"], doc["port"]) == ("h", 9092)
    back = z.BrokerInfo.decode(1, info.encode())
    assert back.endpoint("REPLICATION") == ("10.0.0.1", 9093)
    assert back.endpoint("CLIENT") == back.endpoint() == ("h", 9092)
    assert back.endpoint("PLAINTEXT") is None
    # a registration without endpoints (pre-0.10) has only its PLAINTEXT address
    assert z.BrokerInfo(2, "k", 1).endpoint("PLAINTEXT") == ("k", 1)
    assert z.BrokerInfo(2, "k", 1).endpoint("REPLICATION") is None


def test_broker_registration_names_each_listeners_security_protocol():
    info = z.BrokerInfo(1, "h", 9093, None, 1, ("SASL_SSL://h:9093", "INTERNAL://h:9094",
                                                 "OPEN://10.0.0.1:9095"),
                        (("SASL_SSL", "SASL_SSL"), ("INTERNAL", "SSL"), ("OPEN", "PLAINTEXT")))
    doc = json.loads(info.encode())
    assert doc["listener_security_protocol_map"] == {
        "SASL_SSL": "SASL_SSL", "INTERNAL": "SSL", "OPEN": "PLAINTEXT"}
    assert (doc["host"], doc["port"]) == ("10.0.0.1", 9095)
    back = z.BrokerInfo.decode(1, info.encode())
    assert back.protocol("INTERNAL") == "SSL" and back.protocol("SASL_SSL") == "SASL_SSL"
    secure_only = z.BrokerInfo(2, "h", 9093, None, 1, ("SASL_SSL://h:9093",),
                               (("SASL_SSL", "SASL_SSL"),))
    assert json.loads(secure_only.encode())["port"] == -1


def test_controller_and_epoch():
    assert json.loads(z.encode_controller(2, 17)) == {"version": 1, "brokerid": 2,
                                                      "timestamp": "17"}
    assert z.decode_controller(b'{"version":1,"brokerid":5,"timestamp":"1"}') == 5
    assert z.decode_epoch(b"12") == 12 and z.encode_epoch(3) == b"3"


def test_topic_assignment_v3():
    a = z.TopicAssignment({1: [2, 0], 0: [0, 1]}, "VCRM3dX8SFK2Ydshq9DXxA")
    doc = json.loads(a.encode())
    assert doc == {"partitions": {"0": [0, 1], "1": [2, 0]}, "topic_id": "VCRM3dX8SFK2Ydshq9DXxA",
                   "adding_replicas": {}, "removing_replicas": {}, "version": 3}
    old = z.TopicAssignment.decode(b'{"version":1,"partitions":{"0":[1,2],"1":[2,3]}}')
    assert old.partitions == {0: [1, 2], 1: [2, 3]} and old.topic_id is None


def test_partition_state():
    kafka = b'{"controller_epoch":1,"leader":3,"version":1,"leader_epoch":55,"isr":[1,2,3]}'
    s = z.PartitionState.decode(kafka, zk_version=7)
    assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.zk_version) == \
        (3, 55, [1, 2, 3], 1, 7)
    assert json.loads(s.encode()) == json.loads(kafka)


def test_config_cluster_id_and_producer_id_block():
    assert json.loads(z.encode_topic_config({"retention.ms": 5})) == {
        "version": 1, "config": {"retention.ms": "5"}}
    assert z.decode_topic_config(b'{"version":1,"config":{"a":"b"}}') == {"a": "b"}
    assert json.loads(z.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}
    assert z.decode_cluster_id(b'{"version":"1","id":"1N7JbZwjS-aW9JCXTZUbGQ"}') == \
        "1N7JbZwjS-aW9JCXTZUbGQ"
    block = z.ProducerIdBlock(1, 1000, 1999)
    assert json.loads(block.encode()) == {"version": 1, "broker": 1, "block_start": "1000",
                                          "block_end": "1999"}
    assert z.ProducerIdBlock.decode(block.encode()) == block


def test_paths():
    assert z.state_path("t", 3) == "/brokers/topics/t/partitions/3/state"
    assert z.broker_path(2) == "/brokers/ids/2"
    assert z.topic_config_path("t") == "/config/topics/t"
