"""Every API key the broker serves, as Kafka's AuthorizerIntegrationTest checks them: the
request without its ACL answers the authorization error of Kafka's KafkaApis (the exact
code), and with the ACL a result that is not an authorization error, for an existing and a
missing topic alike (the answer never discloses whether a topic exists).

In process (handler_harness), with a principal injected: User:client from 10.0.0.9."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import pytest

from gregor.protocol.acl import (AccessControlEntry, AclOperation as Op,
                                 AclPermissionType as Perm, PatternType,
                                 ResourcePattern, ResourceType as RT)
from gregor.broker.security.principal import KafkaPrincipal
from gregor.broker.security.setup import build_security
from gregor.protocol.errors import ErrorCode as E
from gregor.protocol.records.batch import encode_batch
from tests.broker.handler_harness import As, batch, call, create, run_broker

CLIENT = As(KafkaPrincipal("User", "client"), "10.0.0.9")
AUTHZ = {"authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
         "group_initial_rebalance_delay_ms": 0, "auto_create_topics_enable": False,
         "offsets_topic_num_partitions": 1, "transaction_state_log_num_partitions": 1}
GROUP, TXN, EXISTING, MISSING = "group", "txn", "topic", "missing-topic"
AUTH_ERRORS = {E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED,
               E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
T, G, C, X = RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID


@dataclass
class Case:
    api: str
    version: int
    body: Callable[[str], dict]            # topic name -> request body
    expected: int                          # the error without the ACLs
    acls: list = field(default_factory=list)   # [(resource type, name or "topic", op)]
    topic: bool = True                     # run with an existing and a missing topic


def _txn_batch() -> bytes:
    return encode_batch([(int(time.time() * 1000), b"k", b"v", [])], producer_id=7,
                        producer_epoch=0, base_sequence=0, transactional=True)


def _parts(name):
    return [{"name": name, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                           "committed_metadata": ""}]}]


CASES = {
    "Produce": Case("Produce", 8, lambda t: {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": batch(b"v")}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.WRITE)]),
    "Produce-transactional": Case("Produce", 8, lambda t: {
        "transactional_id": TXN, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": _txn_batch()}]}]},
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [(T, "topic", Op.WRITE), (X, TXN, Op.WRITE)]),
    "Fetch": Case("Fetch", 11, lambda t: {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "session_epoch": -1, "topics": [{"topic": t, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.READ)]),
    "Fetch-follower": Case("Fetch", 11, lambda t: {
        "replica_id": 1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "session_epoch": -1, "topics": [{"topic": t, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "ListOffsets": Case("ListOffsets", 5, lambda t: {"replica_id": -1, "topics": [
        {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DESCRIBE)]),
    "Metadata": Case("Metadata", 9, lambda t: {"topics": [{"name": t}],
                                               "allow_auto_topic_creation": False},
                     E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DESCRIBE)]),
    "LeaderAndIsr": Case("LeaderAndIsr", 5, lambda t: {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": 1, "topic_states": [
            {"topic_name": t, "topic_id": bytes(16), "partition_states": [
                {"partition_index": 0, "leader": 1, "leader_epoch": 1, "isr": [1],
                 "replicas": [1]}]}], "live_leaders": []},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "StopReplica": Case("StopReplica", 3, lambda t: {
        "controller_id": 1, "controller_epoch": 1, "topic_states": [
            {"topic_name": t, "partition_states": [{"partition_index": 0,
                                                    "delete_partition": True}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "UpdateMetadata": Case("UpdateMetadata", 7, lambda t: {
        "controller_id": 1, "controller_epoch": 1, "topic_states": [], "live_brokers": []},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)], topic=False),
    "ControlledShutdown": Case("ControlledShutdown", 3, lambda t: {"broker_id": 1},
                               E.CLUSTER_AUTHORIZATION_FAILED,
                               [(C, "kafka-cluster", Op.CLUSTER_ACTION)], topic=False),
    "AlterPartition": Case("AlterPartition", 2, lambda t: {"broker_id": 1, "topics": []},
                           E.CLUSTER_AUTHORIZATION_FAILED,
                           [(C, "kafka-cluster", Op.CLUSTER_ACTION)], topic=False),
    "OffsetCommit": Case("OffsetCommit", 8, lambda t: {
        "group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": _parts(t)}, E.GROUP_AUTHORIZATION_FAILED,
        [(G, GROUP, Op.READ), (T, "topic", Op.READ)]),
    "OffsetCommit-topic": Case("OffsetCommit", 8, lambda t: {
        "group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": _parts(t)}, E.TOPIC_AUTHORIZATION_FAILED,
        [(G, GROUP, Op.READ), (T, "topic", Op.READ)]),
    "OffsetFetch": Case("OffsetFetch", 8, lambda t: {"groups": [
        {"group_id": GROUP, "topics": [{"name": t, "partition_indexes": [0]}]}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE), (T, "topic", Op.DESCRIBE)]),
    "OffsetFetch-topic": Case("OffsetFetch", 8, lambda t: {"groups": [
        {"group_id": GROUP, "topics": [{"name": t, "partition_indexes": [0]}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE), (T, "topic", Op.DESCRIBE)]),
    "FindCoordinator-group": Case("FindCoordinator", 4, lambda t: {
        "key_type": 0, "coordinator_keys": [GROUP]}, E.GROUP_AUTHORIZATION_FAILED,
        [(G, GROUP, Op.DESCRIBE)], topic=False),
    "FindCoordinator-transaction": Case("FindCoordinator", 2, lambda t: {
        "key_type": 1, "key": TXN}, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        [(X, TXN, Op.DESCRIBE)], topic=False),
    "JoinGroup": Case("JoinGroup", 5, lambda t: {
        "group_id": GROUP, "session_timeout_ms": 10000, "rebalance_timeout_ms": 100,
        "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "Heartbeat": Case("Heartbeat", 4, lambda t: {"group_id": GROUP, "generation_id": 1,
                                                 "member_id": "m"},
                      E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "LeaveGroup": Case("LeaveGroup", 4, lambda t: {"group_id": GROUP, "members": [
        {"member_id": "m"}]}, E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "SyncGroup": Case("SyncGroup", 5, lambda t: {
        "group_id": GROUP, "generation_id": 1, "member_id": "m", "protocol_type": "consumer",
        "protocol_name": "range", "assignments": []},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "DescribeGroups": Case("DescribeGroups", 5, lambda t: {"groups": [GROUP]},
                           E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE)],
                           topic=False),
    "CreateTopics": Case("CreateTopics", 4, lambda t: {"topics": [
        {"name": t, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 1000},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.CREATE)]),
    "DeleteTopics": Case("DeleteTopics", 3, lambda t: {"topic_names": [t], "timeout_ms": 1000},
                         E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DELETE)]),
    "DeleteRecords": Case("DeleteRecords", 1, lambda t: {"topics": [
        {"name": t, "partitions": [{"partition_index": 0, "offset": 0}]}], "timeout_ms": 1000},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DELETE)]),
    "InitProducerId-idempotent": Case("InitProducerId", 4, lambda t: {
        "transactional_id": None, "transaction_timeout_ms": 1000},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.IDEMPOTENT_WRITE)],
        topic=False),
    "InitProducerId-write-any-topic": Case("InitProducerId", 4, lambda t: {
        "transactional_id": None, "transaction_timeout_ms": 1000},
        E.CLUSTER_AUTHORIZATION_FAILED, [(T, "unrelated", Op.WRITE)], topic=False),
    "InitProducerId-transactional": Case("InitProducerId", 4, lambda t: {
        "transactional_id": TXN, "transaction_timeout_ms": 60000},
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE)], topic=False),
    "OffsetForLeaderEpoch": Case("OffsetForLeaderEpoch", 4, lambda t: {
        "replica_id": -1, "topics": [{"topic": t, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DESCRIBE)]),
    "OffsetForLeaderEpoch-follower": Case("OffsetForLeaderEpoch", 4, lambda t: {
        "replica_id": 1, "topics": [{"topic": t, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "AddPartitionsToTxn": Case("AddPartitionsToTxn", 3, lambda t: {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 7,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": t, "partitions": [0]}]},
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE), (T, "topic", Op.WRITE)]),
    "AddPartitionsToTxn-topic": Case("AddPartitionsToTxn", 3, lambda t: {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 7,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": t, "partitions": [0]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE), (T, "topic", Op.WRITE)]),
    "AddPartitionsToTxn-broker": Case("AddPartitionsToTxn", 4, lambda t: {
        "transactions": [{"transactional_id": TXN, "producer_id": 7, "producer_epoch": 0,
                          "verify_only": True, "topics": [{"name": t, "partitions": [0]}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "AddOffsetsToTxn": Case("AddOffsetsToTxn", 3, lambda t: {
        "transactional_id": TXN, "producer_id": 7, "producer_epoch": 0, "group_id": GROUP},
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE), (G, GROUP, Op.READ)],
        topic=False),
    "AddOffsetsToTxn-group": Case("AddOffsetsToTxn", 3, lambda t: {
        "transactional_id": TXN, "producer_id": 7, "producer_epoch": 0, "group_id": GROUP},
        E.GROUP_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE), (G, GROUP, Op.READ)], topic=False),
    "EndTxn": Case("EndTxn", 3, lambda t: {"transactional_id": TXN, "producer_id": 7,
                                           "producer_epoch": 0, "committed": True},
                   E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [(X, TXN, Op.WRITE)], topic=False),
    "WriteTxnMarkers": Case("WriteTxnMarkers", 1, lambda t: {"markers": [
        {"producer_id": 7, "producer_epoch": 0, "transaction_result": True,
         "topics": [{"name": t, "partition_indexes": [0]}], "coordinator_epoch": 0}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)]),
    "ReadShareGroupState": Case("ReadShareGroupState", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0, "leader_epoch": 0}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)],
        topic=False),
    "WriteShareGroupState": Case("WriteShareGroupState", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
             "state_batches": []}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)],
        topic=False),
    "InitializeShareGroupState": Case("InitializeShareGroupState", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0, "state_epoch": 1, "start_offset": 0}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)],
        topic=False),
    "DeleteShareGroupState": Case("DeleteShareGroupState", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)],
        topic=False),
    "ReadShareGroupStateSummary": Case("ReadShareGroupStateSummary", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_id": bytes(16), "partitions": [
            {"partition": 0, "leader_epoch": -1}]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.CLUSTER_ACTION)],
        topic=False),
    "TxnOffsetCommit": Case("TxnOffsetCommit", 3, lambda t: {
        "transactional_id": TXN, "group_id": GROUP, "producer_id": 7, "producer_epoch": 0,
        "generation_id": -1, "member_id": "", "topics": _parts(t)},
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        [(X, TXN, Op.WRITE), (G, GROUP, Op.READ), (T, "topic", Op.READ)]),
    "DescribeAcls": Case("DescribeAcls", 2, lambda t: {
        "resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1,
        "permission_type": 1}, E.CLUSTER_AUTHORIZATION_FAILED,
        [(C, "kafka-cluster", Op.DESCRIBE)], topic=False),
    "CreateAcls": Case("CreateAcls", 2, lambda t: {"creations": [
        {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3,
         "principal": "User:x", "host": "*", "operation": 3, "permission_type": 3}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.ALTER)], topic=False),
    "DeleteAcls": Case("DeleteAcls", 2, lambda t: {"filters": [
        {"resource_type_filter": 2, "resource_name_filter": "x", "pattern_type_filter": 3,
         "operation": 1, "permission_type": 1}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.ALTER)], topic=False),
    "DescribeConfigs-topic": Case("DescribeConfigs", 3, lambda t: {"resources": [
        {"resource_type": 2, "resource_name": t, "configuration_keys": None}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.DESCRIBE_CONFIGS)]),
    "DescribeConfigs-broker": Case("DescribeConfigs", 3, lambda t: {"resources": [
        {"resource_type": 4, "resource_name": "0", "configuration_keys": ["num.partitions"]}]},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.DESCRIBE_CONFIGS)],
        topic=False),
    "AlterConfigs-topic": Case("AlterConfigs", 1, lambda t: {"resources": [
        {"resource_type": 2, "resource_name": t, "configs": [
            {"name": "retention.ms", "value": "1000"}]}], "validate_only": True},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.ALTER_CONFIGS)]),
    "AlterConfigs-broker": Case("AlterConfigs", 1, lambda t: {"resources": [
        {"resource_type": 4, "resource_name": "0", "configs": []}], "validate_only": True},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.ALTER_CONFIGS)], topic=False),
    "IncrementalAlterConfigs-topic": Case("IncrementalAlterConfigs", 1, lambda t: {
        "resources": [{"resource_type": 2, "resource_name": t, "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": "1000"}]}],
        "validate_only": True},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.ALTER_CONFIGS)]),
    "IncrementalAlterConfigs-broker": Case("IncrementalAlterConfigs", 1, lambda t: {
        "resources": [{"resource_type": 4, "resource_name": "0", "configs": []}],
        "validate_only": True},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.ALTER_CONFIGS)], topic=False),
    "CreatePartitions": Case("CreatePartitions", 1, lambda t: {"topics": [
        {"name": t, "count": 2, "assignments": None}], "timeout_ms": 1000,
        "validate_only": True}, E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.ALTER)]),
    "DeleteGroups": Case("DeleteGroups", 2, lambda t: {"groups_names": [GROUP]},
                         E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DELETE)], topic=False),
    "OffsetDelete": Case("OffsetDelete", 0, lambda t: {"group_id": GROUP, "topics": [
        {"name": t, "partitions": [{"partition_index": 0}]}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DELETE), (T, "topic", Op.READ)]),
    "OffsetDelete-topic": Case("OffsetDelete", 0, lambda t: {"group_id": GROUP, "topics": [
        {"name": t, "partitions": [{"partition_index": 0}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(G, GROUP, Op.DELETE), (T, "topic", Op.READ)]),
    "DescribeProducers": Case("DescribeProducers", 0, lambda t: {"topics": [
        {"name": t, "partition_indexes": [0]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(T, "topic", Op.READ)]),
    "DescribeTransactions": Case("DescribeTransactions", 0, lambda t: {
        "transactional_ids": [TXN]}, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        [(X, TXN, Op.DESCRIBE)], topic=False),
    "ConsumerGroupHeartbeat": Case("ConsumerGroupHeartbeat", 0, lambda t: {
        "group_id": GROUP, "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 1000,
        "subscribed_topic_names": [t], "topic_partitions": []},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.DESCRIBE)]),
    "ConsumerGroupHeartbeat-topic": Case("ConsumerGroupHeartbeat", 0, lambda t: {
        "group_id": GROUP, "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 1000,
        "subscribed_topic_names": [t], "topic_partitions": []},
        E.TOPIC_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.DESCRIBE)]),
    "ShareGroupHeartbeat": Case("ShareGroupHeartbeat", 1, lambda t: {
        "group_id": GROUP, "member_id": "m1", "member_epoch": 0, "rack_id": None,
        "subscribed_topic_names": [t]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.DESCRIBE)]),
    "ShareGroupHeartbeat-topic": Case("ShareGroupHeartbeat", 1, lambda t: {
        "group_id": GROUP, "member_id": "m1", "member_epoch": 0, "rack_id": None,
        "subscribed_topic_names": [t]},
        E.TOPIC_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.DESCRIBE)]),
    "ShareGroupDescribe": Case("ShareGroupDescribe", 1, lambda t: {
        "group_ids": [GROUP], "include_authorized_operations": False},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE)], topic=False),
    "ShareFetch": Case("ShareFetch", 1, lambda t: {
        "group_id": GROUP, "member_id": "m1", "share_session_epoch": 0, "max_wait_ms": 0,
        "min_bytes": 1, "max_bytes": 1024, "max_records": 10, "batch_size": 10, "topics": [],
        "forgotten_topics_data": []},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "ShareAcknowledge": Case("ShareAcknowledge", 1, lambda t: {
        "group_id": GROUP, "member_id": "m1", "share_session_epoch": 1, "topics": []},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ)], topic=False),
    "DescribeShareGroupOffsets": Case("DescribeShareGroupOffsets", 0, lambda t: {
        "groups": [{"group_id": GROUP, "topics": None}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE)], topic=False),
    "AlterShareGroupOffsets": Case("AlterShareGroupOffsets", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_name": t, "partitions": [
            {"partition_index": 0, "start_offset": 0}]}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.READ)]),
    "AlterShareGroupOffsets-topic": Case("AlterShareGroupOffsets", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_name": t, "partitions": [
            {"partition_index": 0, "start_offset": 0}]}]},
        E.TOPIC_AUTHORIZATION_FAILED, [(G, GROUP, Op.READ), (T, "topic", Op.READ)]),
    "DeleteShareGroupOffsets": Case("DeleteShareGroupOffsets", 0, lambda t: {
        "group_id": GROUP, "topics": [{"topic_name": t}]},
        E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DELETE)], topic=False),
    "DescribeUserScramCredentials": Case("DescribeUserScramCredentials", 0, lambda t: {
        "users": None}, E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.DESCRIBE)],
        topic=False),
    "AlterUserScramCredentials": Case("AlterUserScramCredentials", 0, lambda t: {
        "deletions": [{"name": "nobody", "mechanism": 1}], "upsertions": []},
        E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.ALTER)], topic=False),
    "ConsumerGroupDescribe": Case("ConsumerGroupDescribe", 0, lambda t: {
        "group_ids": [GROUP]}, E.GROUP_AUTHORIZATION_FAILED, [(G, GROUP, Op.DESCRIBE)],
        topic=False),
    "DescribeClientQuotas": Case("DescribeClientQuotas", 1, lambda t: {
        "components": [], "strict": False}, E.CLUSTER_AUTHORIZATION_FAILED,
        [(C, "kafka-cluster", Op.DESCRIBE_CONFIGS)], topic=False),
    "DescribeLogDirs": Case("DescribeLogDirs", 3, lambda t: {"topics": None},
                            E.CLUSTER_AUTHORIZATION_FAILED, [(C, "kafka-cluster", Op.DESCRIBE)],
                            topic=False),
    "AlterClientQuotas": Case("AlterClientQuotas", 1, lambda t: {"entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": "app"}],
         "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
        "validate_only": False}, E.CLUSTER_AUTHORIZATION_FAILED,
        [(C, "kafka-cluster", Op.ALTER_CONFIGS)], topic=False),
}
# The second case of an API grants its first ACL before the "without" run: what is then
# missing is the topic's (or the group's) ACL.
PARTIAL = {"OffsetCommit-topic": 1, "OffsetFetch-topic": 1, "AddPartitionsToTxn-topic": 1,
           "AddOffsetsToTxn-group": 1, "OffsetDelete-topic": 1,
           "ConsumerGroupHeartbeat-topic": 1, "Produce-transactional": 1,
           "ShareGroupHeartbeat-topic": 1, "AlterShareGroupOffsets-topic": 1}
# Answered to everyone (ApiVersions, SASL's own), or filtered instead of refused (checked
# elsewhere).
NO_ERROR_APIS = {"ApiVersions", "SaslHandshake", "SaslAuthenticate", "ListGroups",
                 "ListTransactions", "DescribeCluster"}


def test_the_map_covers_every_api_the_broker_serves(tmp_path):
    async def scenario(b):
        from gregor.protocol import messages
        served = {messages.APIS[k].name for k in b.handlers}
        mapped = {c.api for c in CASES.values()} | NO_ERROR_APIS
        assert served - mapped == set(), "APIs served without an authorization case"
        assert mapped - served == set()
    run_broker(tmp_path, scenario, **AUTHZ)


def codes(resp) -> list[int]:
    out = []
    if isinstance(resp, dict):
        for k, v in resp.items():
            if k in ("error_code", "partition_error_code") and isinstance(v, int):
                out.append(v)
            else:
                out += codes(v)
    elif isinstance(resp, list):
        for x in resp:
            out += codes(x)
    return out


def grant(b, acls, topic: str) -> None:
    for rtype, name, op in acls:
        pattern = ResourcePattern(rtype, topic if name == "topic" else name, PatternType.LITERAL)
        b.authorizer.set_entries(pattern, b.authorizer.entries(pattern) | {
            AccessControlEntry("User:client", "*", op, Perm.ALLOW)})


@pytest.mark.parametrize("name,topic", [(n, t) for n in sorted(CASES)
                                        for t in ((EXISTING, MISSING) if CASES[n].topic
                                                  else (EXISTING,))])
def test_without_the_acl_the_authorization_error_with_it_another_answer(tmp_path, name, topic):
    case = CASES[name]

    async def scenario(b):
        b.security = build_security(b)       # the SCRAM credential store (open() leaves it)
        await create(b, EXISTING, partitions=1)
        grant(b, case.acls[:PARTIAL.get(name, 0)], topic)
        denied = codes(await call(b, case.api, case.version, case.body(topic), CLIENT))
        assert case.expected in denied, (name, denied)
        assert set(denied) & AUTH_ERRORS == {case.expected}, (name, denied)
        grant(b, case.acls, topic)
        got = codes(await call(b, case.api, case.version, case.body(topic), CLIENT))
        assert AUTH_ERRORS.isdisjoint(got), (name, got)
    run_broker(tmp_path, scenario, **AUTHZ)
