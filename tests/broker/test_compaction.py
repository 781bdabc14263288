"""The broker's cleaner: compacted topics (user and internal) read back with offset gaps."""
from __future__ import annotations

import asyncio
import time

import pytest

from gregor.protocol.records.batch import decode_batches, encode_batch

from .handler_harness import (call, committed, compact_now, create, fetch_body, fresp,
                              produce_body, run_broker, wait_for_cleaner)


def _kv(key, value):
    return encode_batch([(int(time.time() * 1000), key, value, None)])


@pytest.mark.parametrize("process", ["true", "false"])
def test_cleaner_thread_compacts_a_topic_fetch_and_list_offsets_see_gaps(tmp_path, process):
    async def s(b):
        await create(b, "table", configs={"cleanup.policy": "compact", "segment.bytes": 300,
                                          "min.cleanable.dirty.ratio": "0.01"})
        for i in range(30):
            await call(b, "Produce", 8, produce_body("table", _kv(b"k%d" % (i % 3), b"v%d" % i)))
        await committed(b)
        p = b.replica_manager.get("table", 0)
        before = p.log.size_bytes
        b._start_cleaner(asyncio.get_running_loop())
        b.cleaner.wake()
        # the pass is counted before its checkpoint is written (both on the cleaner's thread)
        await wait_for_cleaner(lambda: b.cleaner.stats.passes >= 1
                    and (tmp_path / "cleaner-offset-checkpoint").exists())
        assert p.log.size_bytes < before
        got, offset = [], 0
        while offset < p.log.log_end_offset:       # one segment per fetch, as Kafka
            r = await call(b, "Fetch", 11, fetch_body("table", offset))
            bts = decode_batches(fresp(r)["records"])
            got += [(r_.offset, r_.key, r_.value) for bt in bts for r_ in bt]
            offset = bts[-1].last_offset + 1
        active = p.log.active_segment.base_offset
        latest = {}
        for off in range(active):
            latest[b"k%d" % (off % 3)] = off
        assert [o for o, _, _ in got if o < active] == sorted(latest.values())
        assert [o for o, _, _ in got if o >= active] == list(range(active, 30))
        assert all(v == b"v%d" % o for o, _, v in got)
        lo = await call(b, "ListOffsets", 1, {"replica_id": -1, "topics": [{"name": "table",
                        "partitions": [{"partition_index": 0, "timestamp": -2},
                                       ]}]})
        assert lo["topics"][0]["partitions"][0]["offset"] == 0
        assert (tmp_path / "cleaner-offset-checkpoint").read_text().startswith("0\n1\ntable 0 ")
        text = b.metrics.registry.get_sample_value("gregor_log_cleaner_passes_total")
        assert text is not None and text >= 1
    run_broker(tmp_path, s, **{"log.cleaner.backoff.ms": "50",
                               "gregor.log.cleaner.process": process})


def test_describe_and_alter_cleaner_configs(tmp_path):
    async def s(b):
        await create(b, "t", configs={"cleanup.policy": "compact,delete"})
        r = await call(b, "DescribeConfigs", 1, {"resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
            "include_synonyms": False})
        cfg = {c["name"]: c["value"] for c in r["results"][0]["configs"]}
        assert cfg["cleanup.policy"] == "compact,delete"
        assert cfg["delete.retention.ms"] == "86400000"
        assert cfg["min.cleanable.dirty.ratio"] == "0.5"
        assert cfg["min.compaction.lag.ms"] == "0"
        p = b.replica_manager.get("t", 0)
        assert p.log.config.compact and p.log.config.delete
        b.alter_topic_configs("t", {"cleanup.policy": "compact",
                                    "min.cleanable.dirty.ratio": "0.2"})
        assert p.log.config.compact and not p.log.config.delete
        assert p.log.config.min_cleanable_dirty_ratio == 0.2
        bad = await call(b, "CreateTopics", 4, {"topics": [
            {"name": "bad", "num_partitions": 1, "replication_factor": 1, "assignments": [],
             "configs": [{"name": "min.cleanable.dirty.ratio", "value": "2"}]}],
            "timeout_ms": 1000, "validate_only": False})
        assert bad["topics"][0]["error_code"] != 0
        broker = await call(b, "DescribeConfigs", 1, {"resources": [
            {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
            "include_synonyms": False})
        bcfg = {c["name"]: c["value"] for c in broker["results"][0]["configs"]}
        assert bcfg["log.cleaner.enable"] == "true"
        assert bcfg["log.cleaner.dedupe.buffer.size"] == "134217728"
        assert bcfg["log.cleaner.threads"] == "1"
    run_broker(tmp_path, s)


def test_consumer_offsets_are_compacted_and_the_latest_commit_survives(tmp_path):
    async def commit_many(b):
        b.create_topic("t", 1, {})
        for i in range(60):
            r = await call(b, "OffsetCommit", 2, {
                "group_id": "solo", "generation_id_or_member_epoch": -1, "member_id": "",
                "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                    {"partition_index": 0, "committed_offset": i, "committed_metadata": ""}]}]})
            assert r["topics"][0]["partitions"][0]["error_code"] == 0
        await committed(b)
        parts = [p for p in b.replica_manager.partitions.values()
                 if p.topic == "__consumer_offsets" and p.log.log_end_offset > 0]
        assert len(parts) == 1 and parts[0].log.config.compact
        p = parts[0]
        before = await compact_now(b, p, tmp_path)
        assert p.log.size_bytes < before / 5

    async def fetch(b):
        b.groups.load_existing()
        r = await call(b, "OffsetFetch", 3, {"group_id": "solo", "topics": [
            {"name": "t", "partition_indexes": [0]}]})
        assert r["topics"][0]["partitions"][0]["committed_offset"] == 59
    settings = {"log.cleaner.backoff.ms": "50", "offsets.topic.num.partitions": "1"}
    run_broker(tmp_path, commit_many, **settings)
    run_broker(tmp_path, fetch, **settings)


def test_a_corrupt_batch_marks_the_partition_uncleanable_and_the_broker_goes_on(tmp_path):
    async def s(b):
        await create(b, "bad", configs={"cleanup.policy": "compact", "segment.bytes": 300,
                                        "min.cleanable.dirty.ratio": "0.01"})
        for i in range(12):
            await call(b, "Produce", 8, produce_body("bad", _kv(b"k", b"v%d" % i)))
        await committed(b)
        p = b.replica_manager.get("bad", 0)
        seg = p.log.segments[0]
        # a flipped byte inside the first batch: the cleaner must not rewrite it with a
        # fresh CRC; it stops cleaning this partition instead
        import os
        os.pwrite(seg.fd, b"\x7f" * 4, 61)
        b._start_cleaner(asyncio.get_running_loop())
        b.cleaner.wake()
        await wait_for_cleaner(lambda: ("bad", 0) in b.cleaner.uncleanable)
        r = await call(b, "Produce", 8, produce_body("bad", _kv(b"k", b"after")))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    run_broker(tmp_path, s, **{"log.cleaner.backoff.ms": "50"})


def test_transaction_state_is_compacted_and_the_latest_state_survives(tmp_path):
    init = {"transactional_id": "t", "transaction_timeout_ms": 60000}

    async def first(b):
        for _ in range(30):
            r = await call(b, "InitProducerId", 4, init)
            assert r["error_code"] == 0
        await b.txn.coordinator.idle()
        await committed(b)
        parts = [p for p in b.replica_manager.partitions.values()
                 if p.topic == "__transaction_state" and p.log.log_end_offset > 0]
        assert len(parts) == 1 and parts[0].log.config.compact
        p = parts[0]
        before = await compact_now(b, p, tmp_path)
        assert p.log.size_bytes < before / 5
        return r["producer_id"], r["producer_epoch"]

    async def second(b):
        r = await call(b, "InitProducerId", 4, init)
        return r["producer_id"], r["producer_epoch"]
    settings = {"log.cleaner.backoff.ms": "50", "transaction.state.log.num.partitions": "1"}
    pid, epoch = run_broker(tmp_path, first, **settings)
    assert run_broker(tmp_path, second, **settings) == (pid, epoch + 1)
