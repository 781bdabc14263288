"""Which responses tell a client to hold back by itself (KIP-219), by API key and version.

From these versions on, a response's throttle_time_ms means "the broker has muted this
connection for that long; do not send to it meanwhile", and Kafka's clients (the Java
client's NetworkClient, librdkafka, kafka-python) pause that broker's connection. Before them
it meant "this response was already delayed that long", so a broker holds the response back
instead. The table is AbstractResponse.shouldClientThrottle of each of Kafka's response
classes; an API missing from it never asks the client to throttle itself.
"""
from __future__ import annotations

CLIENT_THROTTLES_FROM: dict[int, int] = {
    0: 6,      # Produce
    1: 8,      # Fetch
    2: 3,      # ListOffsets
    3: 6,      # Metadata
    8: 4,      # OffsetCommit
    9: 4,      # OffsetFetch
    10: 2,     # FindCoordinator
    11: 3,     # JoinGroup
    12: 2,     # Heartbeat
    13: 2,     # LeaveGroup
    14: 2,     # SyncGroup
    15: 2,     # DescribeGroups
    16: 2,     # ListGroups
    18: 2,     # ApiVersions
    19: 3,     # CreateTopics
    20: 2,     # DeleteTopics
    21: 1,     # DeleteRecords
    22: 1,     # InitProducerId
    24: 1,     # AddPartitionsToTxn
    25: 1,     # AddOffsetsToTxn
    26: 1,     # EndTxn
    28: 1,     # TxnOffsetCommit
    29: 1,     # DescribeAcls
    30: 1,     # CreateAcls
    31: 1,     # DeleteAcls
    32: 2,     # DescribeConfigs
    33: 1,     # AlterConfigs
    34: 1,     # AlterReplicaLogDirs
    35: 1,     # DescribeLogDirs
    37: 1,     # CreatePartitions
    38: 1,     # CreateDelegationToken
    39: 1,     # RenewDelegationToken
    40: 1,     # ExpireDelegationToken
    41: 1,     # DescribeDelegationToken
    42: 1,     # DeleteGroups
    43: 0,     # ElectLeaders
    44: 0,     # IncrementalAlterConfigs
    45: 0,     # AlterPartitionReassignments
    46: 0,     # ListPartitionReassignments
    47: 0,     # OffsetDelete
    50: 0,     # DescribeUserScramCredentials
    51: 0,     # AlterUserScramCredentials
    75: 0,     # DescribeTopicPartitions
}


def client_throttles(api_key: int, version: int) -> bool:
    """True when a client receiving this response version throttles itself (KIP-219)."""
    since = CLIENT_THROTTLES_FROM.get(api_key)
    return since is not None and version >= since
