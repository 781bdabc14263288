"""The broker's store for the group coordinator (service.LogStore): writes queued in one loop
iteration share batches of `__consumer_offsets`, in order, each answered with its own offset."""
from __future__ import annotations

import asyncio

from gregor.broker.group import service
from gregor.protocol.errors import ErrorCode as E

from tests.broker.handler_harness import call, run_broker, start_call


def _records(n, tag):
    return [(b"%s-k%d" % (tag, i), b"v") for i in range(n)]


def _data_batches(b, partition):
    return [(x.base_offset, x.last_offset, x.producer_id) for x in
            b.groups.store.batches(partition) if not x.is_control]


def test_writes_of_one_iteration_share_a_batch_and_get_their_own_offsets(tmp_path):
    async def s(b):
        b.group_coordinator            # creates __consumer_offsets
        store = b.groups.coordinator.store
        answers = []
        for tag, n in ((b"a", 1), (b"b", 3), (b"c", 2)):
            store.write(0, _records(n, tag), lambda code, last, tag=tag:
                        answers.append((tag, code, last)))
        store.write(1, _records(1, b"d"), lambda code, last: answers.append((b"d", code, last)))
        while len(answers) < 4:
            await asyncio.sleep(0.001)
        assert sorted(answers) == [(b"a", 0, 0), (b"b", 0, 3), (b"c", 0, 5), (b"d", 0, 0)]
        assert _data_batches(b, 0) == [(0, 5, -1)]
        assert [r.key for x in b.groups.store.batches(0) for r in x.records] == \
            [k for tag, n in ((b"a", 1), (b"b", 3), (b"c", 2)) for k, _ in _records(n, tag)]
    run_broker(tmp_path, s)


def test_a_transactional_write_keeps_its_place_between_plain_ones(tmp_path):
    async def s(b):
        b.group_coordinator
        store = b.groups.coordinator.store
        answers = {}
        store.write(0, _records(2, b"a"), lambda c, last: answers.setdefault("a", (c, last)))
        store.write(0, _records(1, b"t"), lambda c, last: answers.setdefault("t", (c, last)),
                    producer=(7, 0))
        store.write(0, _records(1, b"b"), lambda c, last: answers.setdefault("b", (c, last)))
        while len(answers) < 3:
            await asyncio.sleep(0.001)
        assert answers == {"a": (0, 1), "t": (0, 2), "b": (0, 3)}
        assert _data_batches(b, 0) == [(0, 1, -1), (2, 2, 7), (3, 3, -1)]
    run_broker(tmp_path, s)


def test_merged_batches_stay_below_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(service, "MERGE_MAX_BYTES", 100)

    async def s(b):
        b.group_coordinator
        store = b.groups.coordinator.store
        answers = []
        big = [(b"k", b"x" * 150)]          # alone over the cap: a batch of its own
        for records in (_records(1, b"a"), _records(1, b"b"), big, _records(1, b"c")):
            store.write(0, records, lambda code, last: answers.append((code, last)))
        while len(answers) < 4:
            await asyncio.sleep(0.001)
        assert answers == [(0, 0), (0, 1), (0, 2), (0, 3)]
        assert _data_batches(b, 0) == [(0, 1, -1), (2, 2, -1), (3, 3, -1)]
    run_broker(tmp_path, s)


def test_a_failed_append_answers_every_write_of_its_batch(tmp_path):
    async def s(b):
        b.group_coordinator
        store = b.groups.coordinator.store
        answers = []
        b.replica_manager.remove(("__consumer_offsets", 0))
        for tag in (b"a", b"b"):
            store.write(0, _records(1, tag), lambda code, last: answers.append((code, last)))
        while len(answers) < 2:
            await asyncio.sleep(0.001)
        assert answers == [(E.NOT_LEADER_OR_FOLLOWER, -1)] * 2
    run_broker(tmp_path, s)


def test_pipelined_offset_commits_are_one_append_and_all_acknowledged(tmp_path):
    async def s(b):
        b.create_topic("t", 1, {})
        body = {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                "topics": [{"name": "t", "partitions": [
                    {"partition_index": 0, "committed_offset": 0,
                     "committed_metadata": ""}]}]}
        futs = []
        for i in range(20):
            body["topics"][0]["partitions"][0]["committed_offset"] = i
            futs.append(start_call(b, "OffsetCommit", 8, body))
        resps = [await f for f in futs]
        assert all(r["topics"][0]["partitions"][0]["error_code"] == 0 for r in resps)
        part = b.groups.coordinator.partition_of("g")
        assert _data_batches(b, part) == [(0, 19, -1)]
        f = await call(b, "OffsetFetch", 7, {"group_id": "g", "topics": None,
                                             "require_stable": True})
        assert f["topics"][0]["partitions"][0]["committed_offset"] == 19
        c = b.groups.coordinator.groups["g"].offsets[("t", 0)]
        assert c.log_offset == 19
    run_broker(tmp_path, s)
