"""The records of `__share_group_state`: one share-partition's durable state per key.

Kafka's share coordinator writes ShareSnapshot records (the whole state) and ShareUpdate
records (deltas, folded into a new snapshot every 500 updates) keyed by (group, topic id,
partition). Their exact byte layout is not in the schema files we work from, so the layout
here is our own, and every record is a snapshot: the topic is compacted, so the last record
per key is the state, and a tombstone (no value) deletes it.

    key   = int16 record type (0 = snapshot) + JSON [group id, topic id hex, partition]
    value = int16 version (0) + JSON {"state_epoch", "start_offset", "end_offset",
            "leader_epoch" (the share-partition leader's, in a cluster; -1 on one node),
            "batches": [[first, last, state, delivery count], ...]}

Acquired records are written as available (an acquisition is never persisted, as in Kafka):
after a restart they are delivered again, with the delivery count they had when last written.
The key's partition is Kafka's: abs(Java hashCode of "group:topicId:partition") % partitions.
"""
from __future__ import annotations

import json
import struct

TOPIC = "__share_group_state"
SNAPSHOT = 0
_I16 = struct.Struct(">h")
# A value's JSON is bounded by the window (group.share.partition.max.record.locks runs at
# most); anything far larger in the log is not ours and is skipped when loading.
MAX_VALUE_BYTES = 16 << 20


def java_hash(text: str) -> int:
    """Java's String.hashCode() (over UTF-16 code units), as a signed 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, topic_id: bytes, partition: int, partitions: int) -> int:
    h = java_hash(f"{group_id}:{_uuid_string(topic_id)}:{partition}")
    return (0 if h == -2147483648 else abs(h)) % partitions


def _uuid_string(topic_id: bytes) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    import base64
    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")


def encode_key(group_id: str, topic_id: bytes, partition: int) -> bytes:
    return _I16.pack(SNAPSHOT) + json.dumps([group_id, topic_id.hex(), partition]).encode()


def decode_key(data: bytes) -> tuple[str, bytes, int] | None:
    if data is None or len(data) < 2 or _I16.unpack_from(data)[0] != SNAPSHOT:
        return None
    try:
        group_id, topic_hex, partition = json.loads(bytes(data[2:]))
        return str(group_id), bytes.fromhex(topic_hex), int(partition)
    except (ValueError, TypeError):
        return None


def encode_value(state_epoch: int, start_offset: int, end_offset: int, runs,
                 leader_epoch: int = -1) -> bytes:
    return _I16.pack(0) + json.dumps(
        {"state_epoch": state_epoch, "start_offset": start_offset, "end_offset": end_offset,
         "leader_epoch": leader_epoch, "batches": [list(r) for r in runs]},
        separators=(",", ":")).encode()


def decode_value(data: bytes | None) -> dict | None:
    """The state, or None for a tombstone or a value we cannot read."""
    if data is None or len(data) < 2 or len(data) > MAX_VALUE_BYTES:
        return None
    if _I16.unpack_from(data)[0] != 0:
        return None
    try:
        v = json.loads(bytes(data[2:]))
        return {"state_epoch": int(v["state_epoch"]), "start_offset": int(v["start_offset"]),
                "end_offset": int(v["end_offset"]),
                "leader_epoch": int(v.get("leader_epoch", -1)),
                "batches": [tuple(int(x) for x in b) for b in v["batches"]]}
    except (ValueError, TypeError, KeyError):
        return None
