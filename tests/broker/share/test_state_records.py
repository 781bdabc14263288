"""The records of `__share_group_state` in Kafka's layout (gregor/broker/share/state_records.py):
bytes written out by hand from Kafka's ShareSnapshot/ShareUpdate schemas, the encoder against
the protocol engine's generic encoding of the same fields, round trips, a ShareUpdate folded
into the snapshot before it, records that do not decode skipped (never a crash, never an
allocation by a length the record claims), and the last snapshot per key surviving compaction
and a restart."""
import asyncio
import json
import logging
import random
import struct
import tracemalloc

import pytest

from gregor.broker.share import state_records as S
from gregor.broker.share.partition_state import SharePartition

from ..handler_harness import compact_now, run_broker

TID = bytes(range(1, 17))


def test_a_snapshot_key_and_value_are_the_bytes_of_kafkas_schema():
    """Written out field by field from ShareSnapshotKey (record type 0; not flexible) and
    ShareSnapshotValue v0 (flexible: compact array, a tagged-field section per struct and at
    the end, where tag 0 is DeliveryCompleteCount)."""
    key = S.encode_key("grp", TID, 7)
    assert key == bytes.fromhex(
        "0000"                                  # record type 0: ShareSnapshot
        "0003" "677270"                         # GroupId: int16 length, "grp"
        "0102030405060708090a0b0c0d0e0f10"      # TopicId: 16 bytes
        "00000007")                             # Partition
    value = S.encode_snapshot(
        3, 5, [(5, 6, S.ACKNOWLEDGED, 1), (7, 9, S.AVAILABLE, 2), (10, 10, S.ACQUIRED, 3)],
        leader_epoch=8, snapshot_epoch=2, create_ms=1000, write_ms=2000)
    assert value == bytes.fromhex(
        "0000"                                  # value version 0
        "00000002"                              # SnapshotEpoch
        "00000003"                              # StateEpoch
        "00000008"                              # LeaderEpoch
        "0000000000000005"                      # StartOffset
        "00000000000003e8"                      # CreateTimestamp 1000
        "00000000000007d0"                      # WriteTimestamp 2000
        "04"                                    # StateBatches: uvarint 3 + 1
        "0000000000000005" "0000000000000006" "02" "0001" "00"   # acknowledged, count 1
        "0000000000000007" "0000000000000009" "00" "0002" "00"   # available, count 2
        "000000000000000a" "000000000000000a" "00" "0003" "00"   # acquired: as available
        "01" "00" "04" "00000002")              # 1 tagged field: tag 0, 4 bytes, 2 complete


def test_an_update_key_and_value_are_the_bytes_of_kafkas_schema():
    assert S.encode_key("g", TID, 0, S.UPDATE)[:5] == bytes.fromhex("0001" "0001" "67")
    assert S.encode_update(4, -1, -1, [(3, 3, S.ARCHIVED, 5)]) == bytes.fromhex(
        "0000"                                  # value version 0
        "00000004"                              # SnapshotEpoch
        "ffffffff"                              # LeaderEpoch -1
        "ffffffffffffffff"                      # StartOffset -1: unchanged
        "02" "0000000000000003" "0000000000000003" "04" "0005" "00"
        "00")                                   # no tagged fields (DeliveryCompleteCount -1)


def test_the_packed_encoding_is_the_generic_engines():
    rnd = random.Random(7)
    for _ in range(50):
        start = rnd.randrange(0, 1 << 40)
        runs, first = [], start
        for _ in range(rnd.randrange(0, 30)):
            n = rnd.randrange(1, 1000)
            runs.append((first, first + n - 1, rnd.choice([0, 2, 4]), rnd.randrange(0, 11)))
            first += n
        args = dict(snapshot_epoch=rnd.randrange(1 << 31), create_ms=rnd.randrange(1 << 42),
                    write_ms=rnd.randrange(1 << 42))
        fields = {"snapshot_epoch": args["snapshot_epoch"], "state_epoch": 9, "leader_epoch": 4,
                  "start_offset": start, "delivery_complete_count": S.complete_count(runs),
                  "create_timestamp": args["create_ms"], "write_timestamp": args["write_ms"],
                  "state_batches": S._batch_dicts(runs)}
        generic = b"\0\0" + S.SNAPSHOT_CODEC.encode(fields)
        assert S.encode_snapshot(9, start, runs, 4, **args) == generic
        update = b"\0\0" + S.UPDATE_CODEC.encode({
            "snapshot_epoch": 1, "leader_epoch": 4, "start_offset": start,
            "state_batches": S._batch_dicts(runs)})
        assert S.encode_update(1, 4, start, runs) == update


def test_round_trips():
    for group in ("g", "grüppe-ü", "x" * 300):
        assert S.decode_key(S.encode_key(group, TID, 12)) == (S.SNAPSHOT, (group, TID, 12))
    assert S.decode_key(S.encode_key("g", TID, 0, S.UPDATE)) == (S.UPDATE, ("g", TID, 0))
    runs = [(4, 5, S.AVAILABLE, 3), (6, 9, S.ACKNOWLEDGED, 1), (10, 10, S.ARCHIVED, 5)]
    got = S.decode_snapshot(S.encode_snapshot(2, 4, runs, 6, snapshot_epoch=11,
                                              create_ms=100, write_ms=200))
    assert got == {"state_epoch": 2, "start_offset": 4, "end_offset": 11, "leader_epoch": 6,
                   "batches": runs, "snapshot_epoch": 11, "create_timestamp": 100,
                   "write_timestamp": 200}
    # initialised without a start offset (-1): no window
    empty = S.decode_snapshot(S.encode_snapshot(1, -1, []))
    assert empty["start_offset"] == empty["end_offset"] == -1 and empty["batches"] == []
    assert S.decode_update(S.encode_update(3, 2, 8, runs[1:])) == {
        "snapshot_epoch": 3, "leader_epoch": 2, "start_offset": 8, "batches": runs[1:]}


def test_a_value_without_the_tag_or_with_tags_kafka_may_add_decodes():
    head = struct.pack(">hiiiqqq", 0, 0, 1, 2, 10, 5, 6)
    batch = struct.pack(">qqbh", 10, 12, 2, 1)
    plain = head + b"\x02" + batch + b"\x00" + b"\x00"
    assert S.decode_snapshot(plain)["batches"] == [(10, 12, 2, 1)]
    # an unknown tag 5 (3 bytes) in the batch and after tag 0 at the end
    tagged = head + b"\x02" + batch + b"\x01\x05\x03abc" + b"\x02\x00\x04\x00\x00\x00\x03" \
        + b"\x05\x01z"
    assert S.decode_snapshot(tagged)["batches"] == [(10, 12, 2, 1)]


# -- folding ShareUpdates into the snapshot before them ---------------------------------------

def _load(records):
    states = {}
    n = S.load(states, records)
    return states, n


def test_an_update_overlays_the_snapshot_before_it():
    key = ("g", TID, 0)
    snap = (S.encode_key(*key), S.encode_snapshot(
        5, 100, [(100, 109, S.AVAILABLE, 1), (110, 119, S.AVAILABLE, 2)], 3,
        snapshot_epoch=4, create_ms=1, write_ms=2))
    ack = (S.encode_key(*key, S.UPDATE), S.encode_update(         # start and leader unchanged
        4, -1, -1, [(105, 112, S.ACKNOWLEDGED, 1)]))
    states, n = _load([snap, ack])
    assert n == 2
    s = states[key]
    assert s["batches"] == [(100, 104, 0, 1), (105, 112, 2, 1), (113, 119, 0, 2)]
    assert (s["start_offset"], s["end_offset"], s["leader_epoch"], s["state_epoch"],
            s["snapshot_epoch"]) == (100, 120, 3, 5, 4)
    move = (S.encode_key(*key, S.UPDATE), S.encode_update(       # start moves, leader too
        4, 6, 113, [(120, 121, S.ARCHIVED, 5)]))
    states, _ = _load([snap, ack, move])
    s = states[key]
    assert s["batches"] == [(113, 119, 0, 2), (120, 121, 4, 5)]
    assert (s["start_offset"], s["end_offset"], s["leader_epoch"], s["state_epoch"]) == \
        (113, 122, 6, 5)
    # a later snapshot replaces everything folded before it
    snap2 = (S.encode_key(*key), S.encode_snapshot(6, 200, [], 7, snapshot_epoch=5))
    states, _ = _load([snap, ack, snap2])
    assert states[key]["batches"] == [] and states[key]["start_offset"] == 200


def test_an_update_without_a_snapshot_and_a_snapshot_tombstone():
    key, other = ("g", TID, 0), ("h", TID, 1)
    lone = (S.encode_key(*key, S.UPDATE), S.encode_update(0, 1, 5, [(5, 6, 2, 1)]))
    states, _ = _load([lone])
    assert states == {}                           # no state epoch to fold it into
    snap = (S.encode_key(*other), S.encode_snapshot(1, 3, [(3, 4, 0, 1)]))
    states, _ = _load([snap, (S.encode_key(*other), None)])
    assert states == {}
    # an update's tombstone leaves the snapshot's state alone
    states, _ = _load([snap, (S.encode_key(*other, S.UPDATE), None)])
    assert states[other]["batches"] == [(3, 4, 0, 1)]


def test_overlay_cuts_below_the_start_and_merges_equal_neighbours():
    assert S.overlay([(0, 100, 0, 0)], [(50, 60, 2, 1), (55, 57, 4, 1), (0, 0, 2, 1)], 1) == [
        (1, 49, 0, 0), (50, 54, 2, 1), (55, 57, 4, 1), (58, 60, 2, 1), (61, 100, 0, 0)]
    assert S.overlay([(0, 9, 0, 1)], [(10, 19, 0, 1), (20, 20, 0, 2)], 0) == [
        (0, 19, 0, 1), (20, 20, 0, 2)]


# -- records that do not decode ----------------------------------------------------------------

def _old_layout(key, start):
    """gregor's earlier JSON layout of the same state."""
    return (struct.pack(">h", 0) + json.dumps([key[0], key[1].hex(), key[2]]).encode(),
            struct.pack(">h", 0) + json.dumps({"state_epoch": 0, "start_offset": start,
                                               "end_offset": start, "batches": []}).encode())


def test_records_that_do_not_decode_are_skipped_with_a_log_line(caplog):
    key = ("g", TID, 0)
    good = S.encode_snapshot(2, 7, [(7, 8, 0, 1)])
    rnd = random.Random(3)
    garbage = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 80)))
               for _ in range(300)]
    records = [_old_layout(key, 5),
               (S.encode_key(*key), good),
               (S.encode_key(*key), good[:-3]),                    # truncated
               (S.encode_key(*key), b"\x00\x01" + good[2:]),       # value version 1
               (S.encode_key(*key), good + b"\x00"),               # trailing byte
               (b"\x00\x07" + S.encode_key(*key)[2:], good),      # record type 7
               (S.encode_key(*key)[:-1], good),                    # short key
               (S.encode_key(*key, S.UPDATE), b"\x00\x00\x00"),     # update that is not one
               (S.encode_key(*key), S.encode_snapshot(2, 7, [(9, 8, 0, 1)])),   # last < first
               (S.encode_key(*key), S.encode_snapshot(2, 7, [(7, 8, 3, 1)]))]   # state 3
    records += [(g, good) for g in garbage] + [(S.encode_key(*key), g) for g in garbage]
    with caplog.at_level(logging.WARNING, logger="gregor.broker.share.state_records"):
        states, n = _load(records)
    assert states[key]["batches"] == [(7, 8, 0, 1)] and states[key]["start_offset"] == 7
    assert n >= 1 and any("skipped" in r.getMessage() for r in caplog.records)
    assert S.decode_key(_old_layout(key, 5)[0]) is None
    assert S.decode_snapshot(_old_layout(key, 5)[1]) is None


def test_lengths_a_record_claims_are_never_allocated():
    key = ("g", TID, 0)
    huge_array = struct.pack(">hiiiqqq", 0, 0, 1, 2, 10, 5, 6) + b"\xff\xff\xff\xff\x07"
    huge_string = b"\x00\x00\x7f\xff" + b"g" * 10
    tracemalloc.start()
    try:
        for _ in range(3):
            assert S.decode_snapshot(huge_array) is None
            assert S.decode_update(huge_array[:2] + huge_array[18:]) is None
            assert S.decode_key(huge_string) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 10


# -- compaction and a restart ------------------------------------------------------------------

def test_the_last_snapshot_survives_compaction_and_a_restart(tmp_path):
    """Snapshots written through the share service, a deleted key's tombstone and a record of
    gregor's earlier layout, compacted: after a restart the last snapshot per key is the
    state, the deleted key has none, the old record is skipped, and the next snapshot goes
    on from the snapshot epoch and create timestamp it had."""
    a, b = ("g", TID, 0), ("h", TID, 3)
    settings = {"log.cleaner.backoff.ms": "50",
                "share.coordinator.state.topic.num.partitions": "1"}

    async def write(brk):
        share = brk.share
        for i in range(40):
            sp = SharePartition.restore(i, i + 3, [(i, i, 0, 1), (i + 1, i + 2, 2, 2)],
                                        0, 5, 2000)
            for key in (a, b):
                done = asyncio.get_running_loop().create_future()
                share.persist(key, sp, done.set_result)
                assert await done == 0
        done = asyncio.get_running_loop().create_future()
        share.delete_state(b, done.set_result)
        assert await done == 0
        await share.store.append(0, [_old_layout(a, 1)])
        p = brk.replica_manager.get(S.TOPIC, 0)
        assert p.log.config.compact
        before = await compact_now(brk, p, tmp_path)
        assert p.log.size_bytes < before / 5
        return S.decode_snapshot(list(share.store.records(0))[0][1])["create_timestamp"]

    async def restart(brk):
        share = brk.share
        share.load_existing()
        assert set(share._saved) == {a}
        saved = share._saved[a]
        assert (saved["start_offset"], saved["end_offset"], saved["batches"]) == \
            (39, 42, [(39, 39, 0, 1), (40, 41, 2, 2)])
        assert saved["snapshot_epoch"] == 39
        sp = SharePartition.restore(40, 42, [(40, 41, 0, 2)], 0, 5, 2000)
        done = asyncio.get_running_loop().create_future()
        share.persist(a, sp, done.set_result)
        assert await done == 0
        return S.decode_snapshot(list(share.store.records(0))[-1][1])

    created = run_broker(tmp_path, write, **settings)
    last = run_broker(tmp_path, restart, **settings)
    assert last["snapshot_epoch"] == 40 and last["create_timestamp"] == created
    assert last["write_timestamp"] >= created and last["start_offset"] == 40


@pytest.mark.parametrize("state_epoch,same", [(0, True), (1, False)])
def test_the_create_timestamp_is_kept_within_a_state_epoch(state_epoch, same):
    epoch, created = S.next_snapshot((6, 0, 1000), state_epoch, 5000)
    assert epoch == 7 and created == (1000 if same else 5000)
    assert S.next_snapshot(None, 0, 5000) == (0, 5000)
    assert S.next_snapshot(((1 << 31) - 1, 0, 1000), 0, 5000)[0] == 0


def test_a_window_larger_than_any_share_partition_keeps_is_skipped_not_allocated():
    key = ("g", TID, 0)
    huge = (S.encode_key(*key), S.encode_snapshot(
        1, 0, [(0, 0, S.AVAILABLE, 1), (1 << 40, 1 << 40, S.ARCHIVED, 1)], 0))
    states, n = _load([huge])
    assert states == {} and n == 0
    ok = (S.encode_key(*key), S.encode_snapshot(1, 10, [(10, 19, S.AVAILABLE, 1)], 0))
    grow = (S.encode_key(*key, S.UPDATE), S.encode_update(
        0, -1, -1, [(S.MAX_WINDOW + 10, S.MAX_WINDOW + 10, S.ARCHIVED, 1)]))
    states, n = _load([ok, grow])
    assert n == 1 and states[key]["end_offset"] == 20       # the update is skipped
    edge = (S.encode_key(*key), S.encode_snapshot(
        1, 0, [(S.MAX_WINDOW - 1, S.MAX_WINDOW - 1, S.ARCHIVED, 1)], 0))
    states, n = _load([edge])
    assert states[key]["end_offset"] == S.MAX_WINDOW           # the largest allowed window
