"""The records of `__share_group_state`, in Kafka's share coordinator layout (KIP-932), so that
Kafka's tools read what gregor writes and gregor reads what Kafka's share coordinator wrote
(checked against the schemas, byte by byte, not against a Kafka broker's log).

A record's key is an int16 record type followed by the key message (not flexible: int16-length
string, 16-byte uuid, int32); its value is an int16 value version followed by the value message
at that version (version 0, flexible: unsigned varints for array lengths, a tagged-field
section after each struct). A tombstone (no value) deletes the key.

    ShareSnapshot  type 0  key   GroupId string, TopicId uuid, Partition int32
                           value v0: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32,
                                 StartOffset int64, CreateTimestamp int64, WriteTimestamp
                                 int64, StateBatches [FirstOffset int64, LastOffset int64,
                                 DeliveryState int8, DeliveryCount int16],
                                 tag 0: DeliveryCompleteCount int32 (default -1)
    ShareUpdate    type 1  key   as ShareSnapshot's
                           value v0: SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64
                                 (-1: unchanged), StateBatches (as above), tag 0:
                                 DeliveryCompleteCount int32 (default -1)

These are the fields of Kafka 4.2's ShareSnapshotKey/Value and ShareUpdateKey/Value schemas
(share-coordinator/src/main/resources/common/message/ in apache/kafka; their "apiKey" is the
record type). They are described here with the protocol engine's own field lists
(gregor.protocol.schema), the way the request and response messages are.

DeliveryState is Kafka's RecordState code: 0 available, 1 acquired, 2 acknowledged, 4 archived
(checked against RecordState in Kafka's SharePartition.java). An acquisition is never
persisted, as in Kafka: acquired records are written as available, so after a restart they
are delivered again with the delivery count they had when last written.

What gregor writes: a ShareSnapshot (the whole window) on every write. Kafka also writes
ShareUpdate deltas between snapshots (a snapshot every 500), but the topic is compacted and
compaction keeps only the last record per key, so of a run of ShareUpdates only the last
survives: a delta log is only correct under compaction if each update repeats everything
since its snapshot. Whole snapshots are always correct after compaction, so gregor writes
only those. Loading reads both (see `load`): a ShareUpdate is folded into the state of the
snapshot before it, as Kafka's coordinator does: its batches overlay the snapshot's, its start
and leader epochs replace the snapshot's unless -1, and the state epoch stays the snapshot's.

A snapshot's SnapshotEpoch counts the snapshots of its key (0 first); CreateTimestamp is when
the state at its state epoch was first written (an initialize starts a new one), and
WriteTimestamp when this snapshot was. DeliveryCompleteCount is the number of acknowledged or
archived offsets in the window.

A record that does not decode (gregor's earlier JSON layout, a value version this code does
not know, garbage) is skipped when loading and counted in a log line. Decoding never
allocates by a length read from the record: every count and length is checked against the
bytes that remain first. The key's partition is Kafka's: abs(Java hashCode of
"group:topicId:partition") % partitions.
"""
from __future__ import annotations

import base64
import logging
import struct
from bisect import bisect_left
from typing import Iterable

from ...protocol.primitives import DecodeError, encode_uvarint
from ...protocol.schema import Codec, F

log = logging.getLogger("gregor.broker.share.state_records")

TOPIC = "__share_group_state"
SNAPSHOT, UPDATE = 0, 1                  # record types (the schemas' apiKey)
VALUE_VERSION = 0
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
_STATES = (AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED)
_I16 = struct.Struct(">h")
_INT32_MAX = (1 << 31) - 1
# Far larger than any window gregor writes (group.share.partition.max.record.locks runs at
# most, a few bytes each); anything bigger in the log is not ours and is skipped.
MAX_VALUE_BYTES = 16 << 20
# A share-partition's window never holds more than group.share.partition.max.record.locks
# records (Kafka allows at most 10,000); restoring one costs ~14 bytes an offset, so a state
# whose window claims more than this is not one a share-partition wrote and is skipped
# rather than allocated.
MAX_WINDOW = 1 << 20

_KEY = [F("group_id", "string"), F("topic_id", "uuid"), F("partition", "int32")]
_BATCHES = F("state_batches", "[]", fields=[
    F("first_offset", "int64"), F("last_offset", "int64"),
    F("delivery_state", "int8"), F("delivery_count", "int16")])
_COMPLETE = F("delivery_complete_count", "int32", tagged="0+", tag=0, default=-1)
_SNAPSHOT_VALUE = [
    F("snapshot_epoch", "int32"), F("state_epoch", "int32"), F("leader_epoch", "int32"),
    F("start_offset", "int64"), _COMPLETE,
    F("create_timestamp", "int64"), F("write_timestamp", "int64"), _BATCHES]
_UPDATE_VALUE = [
    F("snapshot_epoch", "int32"), F("leader_epoch", "int32"), F("start_offset", "int64"),
    _COMPLETE, _BATCHES]

KEY_CODEC = Codec(_KEY, 0, False)
SNAPSHOT_CODEC = Codec(_SNAPSHOT_VALUE, VALUE_VERSION, True)
UPDATE_CODEC = Codec(_UPDATE_VALUE, VALUE_VERSION, True)
_FAILURES = (DecodeError, ValueError, TypeError, struct.error, UnicodeDecodeError)


# -- the key's partition -----------------------------------------------------------------------

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
    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")


# -- keys --------------------------------------------------------------------------------------

def encode_key(group_id: str, topic_id: bytes, partition: int,
               record_type: int = SNAPSHOT) -> bytes:
    return _I16.pack(record_type) + KEY_CODEC.encode(
        {"group_id": group_id, "topic_id": bytes(topic_id), "partition": partition})


def decode_key(data) -> tuple[int, tuple[str, bytes, int]] | None:
    """(record type, (group id, topic id, partition)), or None for a key that is not a
    ShareSnapshot's or ShareUpdate's."""
    if data is None or len(data) < 2:
        return None
    view = memoryview(data)
    record_type = _I16.unpack_from(view)[0]
    if record_type not in (SNAPSHOT, UPDATE):
        return None
    try:
        k = KEY_CODEC.decode(view[2:])
    except _FAILURES:
        return None
    return record_type, (k["group_id"], bytes(k["topic_id"]), k["partition"])


# -- values ------------------------------------------------------------------------------------

def complete_count(runs) -> int:
    """DeliveryCompleteCount: acknowledged or archived offsets among the runs."""
    return sum(last - first + 1 for first, last, state, _c in runs
               if state == ACKNOWLEDGED or state == ARCHIVED)


def _batch_dicts(runs) -> list[dict]:
    return [{"first_offset": f, "last_offset": la,
             "delivery_state": AVAILABLE if s == ACQUIRED else s,
             "delivery_count": min(c, 0x7FFF)} for f, la, s, c in runs]


# The write path packs the values itself rather than through SNAPSHOT_CODEC: a snapshot is
# written on every acknowledgement, and the engine's per-field closures and one dict per
# batch cost about three times what one struct.pack per batch does. The bytes are the same
# (tests/broker/share/test_state_records.py checks both against each other and against bytes
# written out by hand from the schema).
_SNAPSHOT_HEAD = struct.Struct(">hiiiqqq")   # version, snapshot/state/leader epoch, start,
_UPDATE_HEAD = struct.Struct(">hiiq")        # create, write | version, snapshot/leader, start
_BATCH = struct.Struct(">qqbhB")             # first, last, state, count, no tagged fields
_NO_TAGS = b"\x00"
_COMPLETE_TAG = struct.Struct(">BBBi")       # 1 tagged field: tag 0, 4 bytes, int32


def _batches(runs) -> bytes:
    pack = _BATCH.pack
    return encode_uvarint(len(runs) + 1) + b"".join(
        [pack(f, la, AVAILABLE if s == ACQUIRED else s, c if c < 0x7FFF else 0x7FFF, 0)
         for f, la, s, c in runs])


def _tags(delivery_complete_count: int) -> bytes:
    return _NO_TAGS if delivery_complete_count == -1 else \
        _COMPLETE_TAG.pack(1, 0, 4, delivery_complete_count)


def encode_snapshot(state_epoch: int, start_offset: int, runs, leader_epoch: int = -1, *,
                    snapshot_epoch: int = 0, create_ms: int = -1,
                    write_ms: int = -1) -> bytes:
    """A ShareSnapshot value: the whole window as (first, last, state, delivery count) runs
    (acquired ones written as available)."""
    runs = runs if isinstance(runs, list) else list(runs)
    return b"".join((
        _SNAPSHOT_HEAD.pack(VALUE_VERSION, snapshot_epoch, state_epoch, leader_epoch,
                            start_offset, create_ms, write_ms),
        _batches(runs), _tags(complete_count(runs))))


def encode_update(snapshot_epoch: int, leader_epoch: int, start_offset: int, runs,
                  delivery_complete_count: int = -1) -> bytes:
    """A ShareUpdate value (gregor writes none; loading folds Kafka's, see the docstring)."""
    runs = runs if isinstance(runs, list) else list(runs)
    return b"".join((_UPDATE_HEAD.pack(VALUE_VERSION, snapshot_epoch, leader_epoch,
                                       start_offset),
                     _batches(runs), _tags(delivery_complete_count)))


def _decode(codec: Codec, data) -> dict | None:
    if data is None or len(data) < 2 or len(data) > MAX_VALUE_BYTES:
        return None
    view = memoryview(data)
    if _I16.unpack_from(view)[0] != VALUE_VERSION:
        return None
    try:
        v = codec.decode(view[2:])
    except _FAILURES:
        return None
    runs = []
    for b in v["state_batches"]:
        first, last, state = b["first_offset"], b["last_offset"], b["delivery_state"]
        if first < 0 or last < first or state not in _STATES or b["delivery_count"] < 0:
            return None
        runs.append((first, last, AVAILABLE if state == ACQUIRED else state,
                     b["delivery_count"]))
    v["batches"] = runs
    del v["state_batches"]
    return v


def _window(start_offset: int, runs: list) -> int:
    """The end of the window the runs describe (start_offset when there are none)."""
    return max(start_offset, max(r[1] for r in runs) + 1) if runs else start_offset


def decode_snapshot(data) -> dict | None:
    """A ShareSnapshot value as a state: {state_epoch, start_offset, end_offset, leader_epoch,
    batches, snapshot_epoch, create_timestamp, write_timestamp}; None when it does not
    decode."""
    v = _decode(SNAPSHOT_CODEC, data)
    if v is None:
        return None
    start = v["start_offset"]
    runs = overlay([], v["batches"], start)
    return {"state_epoch": v["state_epoch"], "start_offset": start,
            "end_offset": _window(start, runs), "leader_epoch": v["leader_epoch"],
            "batches": runs, "snapshot_epoch": v["snapshot_epoch"],
            "create_timestamp": v["create_timestamp"],
            "write_timestamp": v["write_timestamp"]}


def decode_update(data) -> dict | None:
    """A ShareUpdate value: {snapshot_epoch, leader_epoch, start_offset, batches}."""
    v = _decode(UPDATE_CODEC, data)
    if v is None:
        return None
    v.pop("delivery_complete_count", None)
    return v


def decode_value(data) -> dict | None:
    """A ShareSnapshot value as a state (None for a tombstone or a value that does not
    decode)."""
    return decode_snapshot(data)


# -- folding -----------------------------------------------------------------------------------

def overlay(old: list, new: Iterable, start_offset: int) -> list:
    """old's runs (sorted, not overlapping) with new's laid over them in order (a later run
    wins where they overlap), cut below start_offset, adjacent runs of the same state and
    count merged. Runs that come in offset order cost a bisection each."""
    out = list(old)
    for run in new:
        run = tuple(run)
        first, last = run[0], run[1]
        i = bisect_left(out, (first,))           # the first run starting at or after first
        if i > 0 and out[i - 1][1] >= first:
            i -= 1
        j, head, tail = i, [], []
        while j < len(out) and out[j][0] <= last:
            r = out[j]
            if r[0] < first:
                head.append((r[0], first - 1, r[2], r[3]))
            if r[1] > last:
                tail.append((last + 1, r[1], r[2], r[3]))
            j += 1
        out[i:j] = head + [run] + tail
    if start_offset >= 0 and out and out[0][0] < start_offset:
        out = [(max(r[0], start_offset),) + r[1:] for r in out if r[1] >= start_offset]
    merged: list = []
    for r in out:
        if merged and merged[-1][1] + 1 == r[0] and merged[-1][2:] == r[2:]:
            merged[-1] = (merged[-1][0],) + r[1:]
        else:
            merged.append(r)
    return merged


def fold_update(state: dict, update: dict) -> dict:
    """The state after a ShareUpdate, as Kafka's coordinator folds one into the snapshot before
    it: the update's batches over the snapshot's, its start offset and leader epoch unless -1;
    the state epoch, snapshot epoch and timestamps stay."""
    start = state["start_offset"] if update["start_offset"] == -1 else update["start_offset"]
    leader = state["leader_epoch"] if update["leader_epoch"] == -1 else update["leader_epoch"]
    runs = overlay(state["batches"], update["batches"], start)
    return {**state, "start_offset": start, "end_offset": _window(start, runs),
            "leader_epoch": leader, "batches": runs}


def load(states: dict, records: Iterable, where: str = TOPIC) -> int:
    """Replay (key, value) records in log order into states (key -> state): a snapshot
    replaces the key's state, an update is folded into it (ignored without a snapshot
    before it), a snapshot tombstone deletes it. Records that do not decode are skipped and
    counted in one log line. Returns the number of records applied."""
    applied = skipped = 0
    for key, value in records:
        k = decode_key(key)
        if k is None:
            skipped += 1
            continue
        record_type, k = k
        if value is None:
            if record_type == SNAPSHOT:
                states.pop(k, None)
            applied += 1
            continue
        if record_type == SNAPSHOT:
            v = decode_snapshot(value)
            if v is None or v["end_offset"] - v["start_offset"] > MAX_WINDOW:
                skipped += 1
                continue
            states[k] = v
        else:
            u = decode_update(value)
            if u is None:
                skipped += 1
                continue
            if k in states:
                folded = fold_update(states[k], u)
                if folded["end_offset"] - folded["start_offset"] > MAX_WINDOW:
                    skipped += 1
                    continue
                states[k] = folded
        applied += 1
    if skipped:
        log.warning("skipped %d record(s) of %s that are not ShareSnapshot/ShareUpdate records "
                    "gregor reads (an earlier layout, an unknown version, or damage)",
                    skipped, where)
    return applied


# -- what the next snapshot of a key carries -----------------------------------------------------

def next_snapshot(previous: tuple | None, state_epoch: int, now_ms: int) -> tuple[int, int]:
    """(snapshot epoch, create timestamp) of a key's next snapshot, from the (snapshot epoch,
    state epoch, create timestamp) of its previous one (None: the first)."""
    if previous is None:
        return 0, now_ms
    epoch, previous_state_epoch, created = previous
    return ((epoch + 1) & _INT32_MAX,
            created if previous_state_epoch == state_epoch and created >= 0 else now_ms)


def snapshot_of(state: dict) -> tuple[int, int, int]:
    """The (snapshot epoch, state epoch, create timestamp) a loaded state was written with."""
    return (state.get("snapshot_epoch", 0), state["state_epoch"],
            state.get("create_timestamp", -1))
