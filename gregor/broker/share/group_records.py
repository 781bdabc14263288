"""Records of share groups' membership in `__consumer_offsets`, in Kafka's schemas (the
ShareGroup*Key/Value records of Kafka's group coordinator), written by the group coordinator
so a share group keeps its epoch, members and assignment across a restart or a coordinator
move.

Key versions (the int16 in front of a key) name the record type, as for consumer groups:

     9 ShareGroupPartitionMetadataKey (group)        -> read and ignored (Kafka 4.0 wrote it;
                                                         later versions no longer have it)
    10 ShareGroupMemberMetadataKey (group, member)   -> rack, client id/host, subscription
    11 ShareGroupMetadataKey (group)                 -> group epoch, metadata hash
    12 ShareGroupTargetAssignmentMetadataKey (group) -> assignment epoch
    13 ShareGroupTargetAssignmentMemberKey (group, member) -> the member's target partitions
    14 ShareGroupCurrentMemberAssignmentKey (group, member) -> member epoch, previous epoch,
       state, assigned partitions
    15 ShareGroupStatePartitionMetadataKey (group)   -> the share-partitions the group
       initialized (and those being initialized or deleted)

Keys are not flexible; values are (version 0, flexible). A null value is a tombstone.
Partitions are keyed by topic id (16 bytes). The MetadataHash gregor writes is its own hash of
the subscribed topics' names, ids and partition counts (not Kafka's): only gregor compares it,
to know at load whether the topics changed while the group was not loaded.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...protocol.schema import Codec, F
from ..group.member_records import RecordFamily

PARTITION_METADATA = 9
MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_MEMBER = 14
STATE_PARTITION_METADATA = 15
KEY_VERSIONS = range(PARTITION_METADATA, STATE_PARTITION_METADATA + 1)
_GROUP_ONLY = {PARTITION_METADATA, GROUP_METADATA, TARGET_METADATA, STATE_PARTITION_METADATA}

_TP = [F("topic_id", "uuid"), F("partitions", "[]int32")]
_TOPIC_PARTITIONS_INFO = [F("topic_id", "uuid"), F("topic_name", "string"),
                          F("partitions", "[]int32"), F("create_timestamp", "int64")]
_VALUES = {
    MEMBER_METADATA: Codec([
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
    ], 0, True),
    GROUP_METADATA: Codec([F("epoch", "int32"), F("metadata_hash", "int64")], 0, True),
    TARGET_METADATA: Codec([F("assignment_epoch", "int32")], 0, True),
    TARGET_MEMBER: Codec([F("topic_partitions", "[]", fields=_TP)], 0, True),
    CURRENT_MEMBER: Codec([
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("assigned_partitions", "[]", fields=_TP),
    ], 0, True),
    STATE_PARTITION_METADATA: Codec([
        F("initializing_topics", "[]", fields=_TOPIC_PARTITIONS_INFO),
        F("initialized_topics", "[]", fields=_TOPIC_PARTITIONS_INFO),
        F("deleting_topics", "[]", fields=[F("topic_id", "uuid"), F("topic_name", "string")]),
    ], 0, True),
}
STABLE = 0           # Kafka's MemberState.STABLE: a share member has no other state


@dataclass(frozen=True)
class ShareKey:
    """A share-group record's key: its type (the key version), group and member."""
    kind: int
    group: str
    member_id: str | None = None


# the type 9 record (PARTITION_METADATA) has no value codec: read and ignored
_FAMILY = RecordFamily("share group", _VALUES, _GROUP_ONLY, ShareKey,
                       (CURRENT_MEMBER, TARGET_MEMBER, MEMBER_METADATA))
encode_key = _FAMILY.encode_key
decode_key = _FAMILY.decode_key
encode_value = _FAMILY.encode_value
decode_value = _FAMILY.decode_value
# Kafka's order: current assignment, target assignment, then the member itself
member_tombstones = _FAMILY.member_tombstones
removed_members = _FAMILY.removed_members


def tps(assignment: dict) -> list[dict]:
    """{topic id: partitions} as the records' TopicPartitions array (sorted, stable bytes)."""
    return [{"topic_id": bytes(t), "partitions": sorted(ps)}
            for t, ps in sorted(assignment.items()) if ps]


def from_tps(entries) -> dict:
    return {bytes(e["topic_id"]): sorted(e["partitions"]) for e in entries if e["partitions"]}


def metadata_hash(topics) -> int:
    """An int64 over ((name, (topic id, partitions) | None), ...): equal exactly when the
    topics a group subscribes to are the same."""
    h = hashlib.blake2b(digest_size=8)
    for name, meta in topics:
        h.update(name.encode() + b"\0")
        if meta is None:
            h.update(b"-\0")
        else:
            h.update(bytes(meta[0]) + meta[1].to_bytes(4, "big", signed=True))
    return int.from_bytes(h.digest(), "big", signed=True)


# -- the records of a share group's changes ---------------------------------------------------
def group_epoch_record(group_id: str, epoch: int, hash_: int) -> tuple:
    return (encode_key(GROUP_METADATA, group_id),
            encode_value(GROUP_METADATA, {"epoch": epoch, "metadata_hash": hash_}))


def member_record(group_id: str, m) -> tuple:
    return (encode_key(MEMBER_METADATA, group_id, m.member_id),
            encode_value(MEMBER_METADATA, {
                "rack_id": m.rack_id, "client_id": m.client_id,
                "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed)}))


def target_record(group_id: str, member_id: str, assignment: dict) -> tuple:
    return (encode_key(TARGET_MEMBER, group_id, member_id),
            encode_value(TARGET_MEMBER, {"topic_partitions": tps(assignment)}))


def target_epoch_record(group_id: str, epoch: int) -> tuple:
    return (encode_key(TARGET_METADATA, group_id),
            encode_value(TARGET_METADATA, {"assignment_epoch": epoch}))


def current_record(group_id: str, m) -> tuple:
    return (encode_key(CURRENT_MEMBER, group_id, m.member_id),
            encode_value(CURRENT_MEMBER, {
                "member_epoch": m.epoch, "previous_member_epoch": m.previous_epoch,
                "state": STABLE, "assigned_partitions": tps(m.assignment)}))


def state_partitions_record(group_id: str, initialized: dict, deleting: dict | None = None
                            ) -> tuple:
    """initialized: {topic id: (name, partitions, create ms)}; deleting: {topic id: name}."""
    return (encode_key(STATE_PARTITION_METADATA, group_id),
            encode_value(STATE_PARTITION_METADATA, {
                "initializing_topics": [],
                "initialized_topics": [
                    {"topic_id": t, "topic_name": name, "partitions": sorted(ps),
                     "create_timestamp": created}
                    for t, (name, ps, created) in sorted(initialized.items())],
                "deleting_topics": [{"topic_id": t, "topic_name": name}
                                    for t, name in sorted((deleting or {}).items())]}))


def group_tombstones(group_id: str, member_ids) -> list:
    """Every record of a group (its members', then its own), deleted."""
    records = []
    for mid in sorted(member_ids):
        records.extend(member_tombstones(group_id, mid))
    return records + [(encode_key(STATE_PARTITION_METADATA, group_id), None),
                      (encode_key(TARGET_METADATA, group_id), None),
                      (encode_key(GROUP_METADATA, group_id), None)]


def replay(recs: dict, key: ShareKey, value: bytes | None) -> None:
    """Apply one record to what loading knows of its group (the last record of a key wins; a
    tombstone removes it). recs: 'epoch', 'hash', 'target_epoch', 'initialized', and per
    member 'members', 'target', 'current'."""
    kind = key.kind
    v = None if value is None else decode_value(kind, value)
    if kind == PARTITION_METADATA:
        return
    if kind == GROUP_METADATA:
        if v is None:
            recs.clear()
        else:
            recs["epoch"], recs["hash"] = v["epoch"], v["metadata_hash"]
    elif kind == TARGET_METADATA:
        recs["target_epoch"] = None if v is None else v["assignment_epoch"]
    elif kind == STATE_PARTITION_METADATA:
        recs["initialized"] = {} if v is None else {
            bytes(t["topic_id"]): (t["topic_name"], set(t["partitions"]),
                                   t["create_timestamp"])
            for t in v["initialized_topics"]}
    else:
        field = {MEMBER_METADATA: "members", TARGET_MEMBER: "target",
                 CURRENT_MEMBER: "current"}[kind]
        per = recs.setdefault(field, {})
        if v is None:
            per.pop(key.member_id, None)
        elif kind == TARGET_MEMBER:
            per[key.member_id] = from_tps(v["topic_partitions"])
        else:
            per[key.member_id] = v
