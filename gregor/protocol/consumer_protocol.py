"""Kafka's ConsumerProtocol: the bytes consumer-group members exchange through the coordinator
(the subscription in JoinGroup's protocol metadata, the assignment in SyncGroup), versions 0-3,
as Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment schemas define them.

Every client writes the same bytes, so gregor's consumer, the admin client's describe and the
broker read what confluent-kafka, kafka-python or Java members wrote. A version newer than 3 is
read as 3 with its extra bytes ignored, as Kafka's own consumers do.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .primitives import DecodeError
from .schema import Codec, F

PROTOCOL_TYPE = "consumer"
HIGHEST = 3
_I16 = struct.Struct(">h")

_TP = [F("topic", "string"), F("partitions", "[]int32")]
_SUBSCRIPTION = [
    F("topics", "[]string"),
    F("user_data", "bytes", nullable="0+", default=None),
    F("owned_partitions", "[]", v="1+", fields=_TP),
    F("generation_id", "int32", v="2+", default=-1),
    F("rack_id", "string", v="3+", nullable="3+", default=None),
]
_ASSIGNMENT = [
    F("assigned_partitions", "[]", fields=_TP),
    F("user_data", "bytes", nullable="0+", default=None),
]
_SUB = {v: Codec(_SUBSCRIPTION, v, False) for v in range(HIGHEST + 1)}
_ASSIGN = {v: Codec(_ASSIGNMENT, v, False) for v in range(HIGHEST + 1)}


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[tuple[str, int]] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None


@dataclass
class Assignment:
    partitions: list[tuple[str, int]]
    user_data: bytes | None = None


def _group(tps) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def _flat(entries) -> list[tuple[str, int]]:
    return [(e["topic"], p) for e in entries or () for p in e["partitions"]]


def _version(data: bytes) -> int:
    if len(data) < 2:
        raise DecodeError("consumer protocol bytes shorter than their version")
    (v,) = _I16.unpack_from(data)
    if v < 0:
        raise DecodeError(f"negative consumer protocol version {v}")
    return min(v, HIGHEST)


def encode_subscription(s: Subscription, version: int = HIGHEST) -> bytes:
    return _I16.pack(version) + _SUB[version].encode({
        "topics": list(s.topics), "user_data": s.user_data,
        "owned_partitions": _group(s.owned_partitions), "generation_id": s.generation_id,
        "rack_id": s.rack_id})


def decode_subscription(data: bytes) -> Subscription:
    v = _version(data)
    d = _SUB[v].decode(memoryview(data)[2:], strict=False)   # newer versions append fields
    return Subscription(list(d["topics"]), _bytes(d["user_data"]),
                        _flat(d.get("owned_partitions")) if v >= 1 else [],
                        d.get("generation_id", -1) if v >= 2 else -1,
                        d.get("rack_id") if v >= 3 else None)


def encode_assignment(a: Assignment, version: int = HIGHEST) -> bytes:
    return _I16.pack(version) + _ASSIGN[version].encode({
        "assigned_partitions": _group(a.partitions), "user_data": a.user_data})


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string (a member given nothing by an old leader) is no partitions."""
    if not data:
        return Assignment([])
    v = _version(data)
    d = _ASSIGN[v].decode(memoryview(data)[2:], strict=False)
    return Assignment(_flat(d["assigned_partitions"]), _bytes(d["user_data"]))


def _bytes(b) -> bytes | None:
    return None if b is None else bytes(b)
