"""Records of KIP-848 consumer groups in `__consumer_offsets`, in Kafka's own schemas (the
ConsumerGroup*Key/Value records of Kafka's group coordinator), so a group written by gregor
reads back the way Kafka would read it.

Key versions (the int16 in front of a key) name the record type:

    3 ConsumerGroupMetadataKey (group)                 -> value: the group epoch
    4 ConsumerGroupPartitionMetadataKey (group)        -> value: subscribed topics' metadata
    5 ConsumerGroupMemberMetadataKey (group, member)   -> value: the member's subscription
    6 ConsumerGroupTargetAssignmentMetadataKey (group) -> value: the target assignment epoch
    7 ConsumerGroupTargetAssignmentMemberKey (group, member) -> value: its target partitions
    8 ConsumerGroupCurrentMemberAssignmentKey (group, member) -> value: epochs, state,
      assigned partitions and partitions pending revocation

Keys are not flexible; values are (version 0, flexible). A null value is a tombstone.
Partitions are keyed by topic id (16 bytes), as in Kafka.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...protocol.schema import Codec, F, NULL
from .member_records import RecordFamily

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_MEMBER = 8
KEY_VERSIONS = range(GROUP_METADATA, CURRENT_MEMBER + 1)
_GROUP_ONLY = {GROUP_METADATA, PARTITION_METADATA, TARGET_METADATA}

_TP = [F("topic_id", "uuid"), F("partitions", "[]int32")]
_VALUES = {
    GROUP_METADATA: Codec([F("epoch", "int32")], 0, True),
    PARTITION_METADATA: Codec([F("topics", "[]", fields=[
        F("topic_id", "uuid"), F("topic_name", "string"), F("num_partitions", "int32"),
        F("partition_metadata", "[]", fields=[F("partition", "int32"),
                                              F("racks", "[]string")])])], 0, True),
    MEMBER_METADATA: Codec([
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
        F("subscribed_topic_regex", "string", nullable="0+"),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("server_assignor", "string", nullable="0+"),
        # Kafka's ClassicMemberMetadata (tag 0) is written only for members that joined with
        # JoinGroup into a consumer group; gregor does not build that migration path.
        F("classic_member_metadata", "struct", nullable="0+", tagged="0+", tag=0,
          default=NULL, fields=[
              F("session_timeout_ms", "int32"),
              F("supported_protocols", "[]", fields=[F("name", "string"),
                                                     F("metadata", "bytes")])]),
    ], 0, True),
    TARGET_METADATA: Codec([F("assignment_epoch", "int32")], 0, True),
    TARGET_MEMBER: Codec([F("topic_partitions", "[]", fields=_TP)], 0, True),
    CURRENT_MEMBER: Codec([
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("assigned_partitions", "[]", fields=_TP),
        F("partitions_pending_revocation", "[]", fields=_TP),
    ], 0, True),
}


@dataclass(frozen=True)
class ConsumerKey:
    """A consumer-group record's key: its type (the key version), group and member."""
    kind: int
    group: str
    member_id: str | None = None


_FAMILY = RecordFamily("consumer group", _VALUES, _GROUP_ONLY, ConsumerKey,
                       (CURRENT_MEMBER, TARGET_MEMBER, MEMBER_METADATA))
encode_key = _FAMILY.encode_key
decode_key = _FAMILY.decode_key
encode_value = _FAMILY.encode_value
decode_value = _FAMILY.decode_value
# Kafka's order: current assignment, target assignment, then the member itself
member_tombstones = _FAMILY.member_tombstones
removed_members = _FAMILY.removed_members


def tps(assignment: dict[bytes, set[int]]) -> list[dict]:
    """{topic id: partitions} as the records' TopicPartitions array (sorted, stable bytes)."""
    return [{"topic_id": t, "partitions": sorted(ps)}
            for t, ps in sorted(assignment.items()) if ps]


def from_tps(entries) -> dict[bytes, set[int]]:
    return {bytes(e["topic_id"]): set(e["partitions"]) for e in entries if e["partitions"]}


# -- the records of a group's changes ---------------------------------------------------------
def group_epoch_record(group_id: str, epoch: int) -> tuple:
    return (encode_key(GROUP_METADATA, group_id), encode_value(GROUP_METADATA, {"epoch": epoch}))


def target_epoch_record(group_id: str, epoch: int) -> tuple:
    return (encode_key(TARGET_METADATA, group_id),
            encode_value(TARGET_METADATA, {"assignment_epoch": epoch}))


def member_record(group_id: str, m) -> tuple:
    return (encode_key(MEMBER_METADATA, group_id, m.member_id),
            encode_value(MEMBER_METADATA, {
                "instance_id": m.instance_id, "rack_id": m.rack_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "server_assignor": m.server_assignor}))


def current_record(group_id: str, m) -> tuple:
    return (encode_key(CURRENT_MEMBER, group_id, m.member_id),
            encode_value(CURRENT_MEMBER, {
                "member_epoch": m.member_epoch,
                "previous_member_epoch": m.previous_member_epoch,
                "state": int(m.state), "assigned_partitions": tps(m.assigned),
                "partitions_pending_revocation": tps(m.pending_revocation)}))


def target_record(group_id: str, member_id: str, a: dict) -> tuple:
    return (encode_key(TARGET_MEMBER, group_id, member_id),
            encode_value(TARGET_MEMBER, {"topic_partitions": tps(a)}))


def partition_metadata_record(group_id: str, meta: dict) -> tuple:
    """meta: {topic name: (topic id, partition count)}; racks are not tracked."""
    return (encode_key(PARTITION_METADATA, group_id),
            encode_value(PARTITION_METADATA, {"topics": [
                {"topic_id": tid, "topic_name": name, "num_partitions": n,
                 "partition_metadata": []} for name, (tid, n) in sorted(meta.items())]}))


def group_tombstones(group) -> list:
    """Every record of a group (its members', then its own), deleted."""
    records = []
    for mid in set(group.members) | set(group.target):
        records.extend(member_tombstones(group.group_id, mid))
    gid = group.group_id
    return records + [(encode_key(TARGET_METADATA, gid), None),
                      (encode_key(PARTITION_METADATA, gid), None),
                      (encode_key(GROUP_METADATA, gid), None)]


def group_snapshot(group, removed=()) -> list:
    """Every record of the group's current state (and tombstones of members removed): written
    after a failed write, so the log holds the state the coordinator goes on with."""
    gid = group.group_id
    records = []
    for mid in sorted(set(removed) - set(group.members)):
        records.extend(member_tombstones(gid, mid))
    records.append(group_epoch_record(gid, group.group_epoch))
    records.append(partition_metadata_record(gid, group.subscription_metadata))
    for mid, m in group.members.items():
        records.append(member_record(gid, m))
        records.append(target_record(gid, mid, group.target.get(mid, {})))
    records.append(target_epoch_record(gid, group.assignment_epoch))
    for m in group.members.values():
        records.append(current_record(gid, m))
    return records
