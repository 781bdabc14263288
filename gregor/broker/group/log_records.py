"""Records of `__consumer_offsets`, in Kafka's own schemas, so tools that read Kafka's offsets
topic read ours.

A key starts with an int16 version that names the record type: 0 and 1 are OffsetCommitKey
(group, topic, partition), 2 is GroupMetadataKey (group). Values start with their own int16
version. We write OffsetCommitValue v3 (v1 when the commit carries an explicit expiry, as old
OffsetCommit requests can) and GroupMetadataValue v3; every version 0-4 is read. A null value
is a tombstone: the offset or the group was deleted. Key versions 3-8 are KIP-848 consumer
group records (consumer_records.py), 9-15 share group records (share/group_records.py); later
ones (streams groups...) are skipped by the loader.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ...protocol.primitives import DecodeError
from . import consumer_records
from ..share import group_records as share_records
from ...protocol.schema import Codec, F

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I64x2 = struct.Struct(">qq")
_KEY_HEAD = struct.Struct(">hh")          # key version, group length
_V3_HEAD = struct.Struct(">hqih")         # value version, offset, leader epoch, metadata length
_V1_HEAD = struct.Struct(">hqh")          # value version, offset, metadata length

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2

_OFFSET_KEY = Codec([F("group", "string"), F("topic", "string"), F("partition", "int32")],
                    0, False)
_GROUP_KEY = Codec([F("group", "string")], 0, False)

_OFFSET_VALUE_FIELDS = [
    F("offset", "int64"),
    F("leader_epoch", "int32", v="3+", default=-1),
    F("metadata", "string"),
    F("commit_timestamp", "int64"),
    F("expire_timestamp", "int64", v="1", default=-1),
]
_OFFSET_VALUES = {v: Codec(_OFFSET_VALUE_FIELDS, v, v >= 4) for v in range(5)}

_MEMBER_FIELDS = [
    F("member_id", "string"),
    F("group_instance_id", "string", v="3+", nullable="3+", default=None),
    F("client_id", "string"),
    F("client_host", "string"),
    F("rebalance_timeout", "int32", v="1+", default=-1),
    F("session_timeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
]
_GROUP_VALUE_FIELDS = [
    F("protocol_type", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("current_state_timestamp", "int64", v="2+", default=-1),
    F("members", "[]", fields=_MEMBER_FIELDS),
]
_GROUP_VALUES = {v: Codec(_GROUP_VALUE_FIELDS, v, v >= 4) for v in range(5)}


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberValue]


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    # Packed by hand (each OffsetCommit writes one per partition; the Codec takes ~4x as
    # long); tests check it against _OFFSET_KEY. Strings come from requests whose int16
    # lengths bound them, so they fit.
    g = group.encode()
    t = topic.encode()
    return b"".join((_KEY_HEAD.pack(OFFSET_KEY_VERSION, len(g)), g, _I16.pack(len(t)), t,
                     _I32.pack(partition)))


def encode_group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + _GROUP_KEY.encode({"group": group})


def decode_key(data: bytes):
    """The key's meaning; None for record types of other group protocols (skipped)."""
    if len(data) < 2:
        raise DecodeError("offsets topic key shorter than its version")
    (version,) = _I16.unpack_from(data)
    body = memoryview(data)[2:]
    if version in (0, 1):
        k = _OFFSET_KEY.decode(body)
        return OffsetKey(k["group"], k["topic"], k["partition"])
    if version == GROUP_KEY_VERSION:
        return GroupKey(_GROUP_KEY.decode(body)["group"])
    if version in consumer_records.KEY_VERSIONS:
        return consumer_records.decode_key(version, body)
    if version in share_records.KEY_VERSIONS:
        return share_records.decode_key(version, body)
    if version > GROUP_KEY_VERSION:
        return None
    raise DecodeError(f"invalid offsets topic key version {version}")


def encode_offset_value(v: OffsetValue) -> bytes:
    return offset_value_bytes(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                              v.expire_timestamp)


def offset_value_bytes(offset: int, leader_epoch: int, metadata: str | None,
                       commit_timestamp: int, expire_timestamp: int = -1) -> bytes:
    """OffsetCommitValue v3 (v1 with an explicit expiry), packed by hand like the key."""
    m = (metadata or "").encode()
    if expire_timestamp >= 0:
        return b"".join((_V1_HEAD.pack(1, offset, len(m)), m,
                         _I64x2.pack(commit_timestamp, expire_timestamp)))
    return b"".join((_V3_HEAD.pack(3, offset, leader_epoch, len(m)), m,
                     _I64.pack(commit_timestamp)))


def decode_offset_value(data: bytes) -> OffsetValue:
    version = _version(data, _OFFSET_VALUES, "offset commit")
    v = _OFFSET_VALUES[version].decode(memoryview(data)[2:])
    return OffsetValue(v["offset"], v["leader_epoch"], v["metadata"], v["commit_timestamp"],
                       v["expire_timestamp"])


def encode_group_value(v: GroupValue) -> bytes:
    version = 3
    return _I16.pack(version) + _GROUP_VALUES[version].encode({
        "protocol_type": v.protocol_type, "generation": v.generation, "protocol": v.protocol,
        "leader": v.leader, "current_state_timestamp": v.current_state_timestamp,
        "members": [m.__dict__ for m in v.members]})


def decode_group_value(data: bytes) -> GroupValue:
    version = _version(data, _GROUP_VALUES, "group metadata")
    v = _GROUP_VALUES[version].decode(memoryview(data)[2:])
    members = [MemberValue(m["member_id"], m["group_instance_id"], m["client_id"],
                           m["client_host"],
                           m["rebalance_timeout"] if m["rebalance_timeout"] >= 0
                           else m["session_timeout"],
                           m["session_timeout"], bytes(m["subscription"]),
                           bytes(m["assignment"])) for m in v["members"]]
    return GroupValue(v["protocol_type"], v["generation"], v["protocol"], v["leader"],
                      v["current_state_timestamp"], members)


def _version(data: bytes, codecs: dict, what: str) -> int:
    if len(data) < 2:
        raise DecodeError(f"{what} value shorter than its version")
    (version,) = _I16.unpack_from(data)
    if version not in codecs:
        raise DecodeError(f"unknown {what} value version {version}")
    return version
