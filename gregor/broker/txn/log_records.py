"""Records of `__transaction_state`, in Kafka's own schemas (TransactionLogKey/Value), so tools
that read Kafka's transaction log read ours.

A record's key is an int16 schema version (0) followed by TransactionLogKey; its value an int16
version followed by TransactionLogValue, or null (a tombstone: the transactional id expired).
We write value version 0, which every Kafka since 0.11 reads; version 1 (flexible, with tagged
fields from KIP-890) is read too.
"""
from __future__ import annotations

import struct

from ...protocol.primitives import DecodeError
from ...protocol.schema import Codec, F
from .state import TxnState, TxnTransit

_KEY_FIELDS = [F("transactional_id", "string")]
_VALUE_FIELDS = [
    F("producer_id", "int64"),
    F("previous_producer_id", "int64", v="1+", tagged="1+", tag=0, default=-1),
    F("next_producer_id", "int64", v="1+", tagged="1+", tag=1, default=-1),
    F("producer_epoch", "int16"),
    F("transaction_timeout_ms", "int32"),
    F("transaction_status", "int8"),
    F("transaction_partitions", "[]", nullable="0+", fields=[
        F("topic", "string"),
        F("partition_ids", "[]int32"),
    ]),
    F("transaction_last_update_timestamp_ms", "int64"),
    F("transaction_start_timestamp_ms", "int64"),
    F("client_transaction_version", "int16", v="1+", tagged="1+", tag=2, default=0),
]
_KEY = Codec(_KEY_FIELDS, 0, False)
_VALUES = {0: Codec(_VALUE_FIELDS, 0, False), 1: Codec(_VALUE_FIELDS, 1, True)}
KEY_VERSION = 0
VALUE_VERSION = 0
_I16 = struct.Struct(">h")


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _KEY.encode({"transactional_id": transactional_id})


def decode_key(data: bytes) -> str:
    """The transactional id of a record key; DecodeError for anything else."""
    if len(data) < 2:
        raise DecodeError("transaction log key shorter than its version")
    (version,) = _I16.unpack_from(data)
    if version != KEY_VERSION:
        raise DecodeError(f"unknown transaction log key version {version}")
    return _KEY.decode(memoryview(data)[2:])["transactional_id"]


def encode_value(t: TxnTransit) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(t.partitions):
        by_topic.setdefault(topic, []).append(partition)
    body = {
        "producer_id": t.producer_id,
        "producer_epoch": t.producer_epoch,
        "transaction_timeout_ms": t.timeout_ms,
        "transaction_status": int(t.state),
        # Kafka writes null partitions for Empty/Complete states' empty sets; either is read.
        "transaction_partitions": [{"topic": k, "partition_ids": v} for k, v in by_topic.items()],
        "transaction_last_update_timestamp_ms": t.last_update_ms,
        "transaction_start_timestamp_ms": t.start_ms,
    }
    return _I16.pack(VALUE_VERSION) + _VALUES[VALUE_VERSION].encode(body)


def decode_value(data: bytes) -> TxnTransit:
    """The state a value record holds (last_* fields are not stored: they come back as -1)."""
    if len(data) < 2:
        raise DecodeError("transaction log value shorter than its version")
    (version,) = _I16.unpack_from(data)
    codec = _VALUES.get(version)
    if codec is None:
        raise DecodeError(f"unknown transaction log value version {version}")
    v = codec.decode(memoryview(data)[2:])
    try:
        state = TxnState(v["transaction_status"])
    except ValueError:
        raise DecodeError(f"unknown transaction status {v['transaction_status']}") from None
    parts = frozenset((p["topic"], i) for p in (v["transaction_partitions"] or ())
                      for i in p["partition_ids"])
    return TxnTransit(producer_id=v["producer_id"], last_producer_id=-1,
                      producer_epoch=v["producer_epoch"], last_producer_epoch=-1,
                      timeout_ms=v["transaction_timeout_ms"], state=state, partitions=parts,
                      start_ms=v["transaction_start_timestamp_ms"],
                      last_update_ms=v["transaction_last_update_timestamp_ms"])

