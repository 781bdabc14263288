"""Fetch and ListOffsets on an in-process broker."""
import asyncio
import time

from gregor.protocol.errors import ErrorCode

from .handler_harness import (batch, call, committed, create, fetch_body, fresp,
                              produce_body, run_broker, start_call, values_of)


async def _fill(b, topic, *groups, partition=0):
    for g in groups:
        resp = await call(b, "Produce", 8, produce_body(topic, batch(*g), partition=partition))
        assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
    await committed(b)


def test_long_poll_is_woken_by_an_append(tmp_path):
    async def s(b):
        await create(b, "t")
        fut = start_call(b, "Fetch", 11, fetch_body("t", 0, max_wait_ms=10_000))
        assert isinstance(fut, asyncio.Future) and not fut.done()
        assert b.replica_manager.fetch_purgatory.delayed() == 1
        await call(b, "Produce", 8, produce_body("t", batch(b"wake")))
        f = fresp(await fut)
        # a fetch that timed out would carry no records: this one was woken by the append
        assert values_of(f["records"]) == [b"wake"] and f["high_watermark"] == 1
        assert b.replica_manager.fetch_purgatory.expired == 0
    run_broker(tmp_path, s)


def test_long_poll_waits_for_min_bytes(tmp_path):
    async def s(b):
        await create(b, "t")
        one = len(batch(b"x" * 100))
        fut = start_call(b, "Fetch", 11, fetch_body("t", 0, max_wait_ms=10_000,
                                                     min_bytes=2 * one + 1))
        await _fill(b, "t", [b"x" * 100], [b"x" * 100])
        assert not fut.done()                 # two batches are not enough yet
        await _fill(b, "t", [b"x" * 100])
        assert len(values_of(fresp(await fut)["records"])) == 3
    run_broker(tmp_path, s)


def test_long_poll_times_out_with_empty_records(tmp_path):
    async def s(b):
        await create(b, "t")
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 0, max_wait_ms=30)))
        assert f["error_code"] == 0 and f["records"] == b"" and f["high_watermark"] == 0
        assert b.replica_manager.fetch_purgatory.expired == 1
    run_broker(tmp_path, s)


def test_offset_out_of_range_and_unknown_partition(tmp_path):
    async def s(b):
        await create(b, "t")
        await _fill(b, "t", [b"a"])
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 5, max_wait_ms=5000)))
        assert f["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE and f["high_watermark"] == 1
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 0, partition=9, max_wait_ms=5000)))
        assert f["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 1)))   # at the end: empty, no error
        assert f["error_code"] == 0 and f["records"] == b""
    run_broker(tmp_path, s)


def test_limits_always_return_one_whole_batch(tmp_path):
    async def s(b):
        await create(b, "t", 2)
        await _fill(b, "t", [b"a" * 300], [b"b" * 300])
        await _fill(b, "t", [b"c" * 300], partition=1)
        body = fetch_body("t", 0, partition_max_bytes=10, max_bytes=10)
        body["topics"][0]["partitions"].append(dict(body["topics"][0]["partitions"][0],
                                                    partition=1))
        resp = await call(b, "Fetch", 11, body)
        # the first batch is larger than both limits and still comes; nothing else fits
        assert values_of(fresp(resp, 0)["records"]) == [b"a" * 300]
        assert fresp(resp, 1)["records"] == b"" and fresp(resp, 1)["high_watermark"] == 1
        resp = await call(b, "Fetch", 11, fetch_body("t", 0, max_bytes=1 << 20))
        assert len(values_of(fresp(resp)["records"])) == 2
    run_broker(tmp_path, s)


def test_list_offsets(tmp_path):
    async def s(b):
        await create(b, "t")
        now = int(time.time() * 1000)
        for i, ts in enumerate((now - 3000, now - 2000, now - 1000)):
            await call(b, "Produce", 8, produce_body("t", batch(b"v%d" % i, ts=ts)))
        await committed(b)

        async def lo(ts, version=1):
            body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t",
                    "partitions": [{"partition_index": 0, "timestamp": ts,
                                    "max_num_offsets": 1}]}]}
            return (await call(b, "ListOffsets", version, body))["topics"][0]["partitions"][0]

        assert (await lo(-2))["offset"] == 0
        assert (await lo(-1))["offset"] == 3
        r = await lo(now - 1500)
        assert (r["offset"], r["timestamp"]) == (2, now - 1000)
        assert (await lo(now + 10_000))["offset"] == -1
        assert (await lo(-1, version=0))["old_style_offsets"] == [3]
        assert (await lo(-1, version=5))["leader_epoch"] == 0
        # inside one batch: the exact record, not the batch's first offset
        from gregor.protocol.records.batch import encode_batch
        await call(b, "Produce", 8, produce_body("t", encode_batch(
            [(now + 100, b"k", b"x", None), (now + 200, b"k", b"y", None),
             (now + 300, b"k", b"z", None)])))
        await committed(b)
        r = await lo(now + 150)
        assert (r["offset"], r["timestamp"]) == (4, now + 200)
    run_broker(tmp_path, s)


def test_old_fetch_versions_get_legacy_message_sets(tmp_path):
    from gregor.protocol.records import legacy

    async def s(b):
        await create(b, "t")
        await _fill(b, "t", [b"a", b"b"])
        for version, magic in ((0, 0), (2, 1), (3, 1)):
            f = fresp(await call(b, "Fetch", version, fetch_body("t", 0)))
            msgs = legacy.decode_message_set(f["records"])
            assert [m.value for m in msgs] == [b"a", b"b"]
            assert {m.magic for m in msgs} == {magic}
    run_broker(tmp_path, s)


def test_zstd_batches_cannot_be_down_converted(tmp_path):
    async def s(b):
        await create(b, "z")
        await call(b, "Produce", 8, produce_body("z", batch(b"a", compression=4)))
        await committed(b)
        f = fresp(await call(b, "Fetch", 3, fetch_body("z", 0)))
        assert f["error_code"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE and f["records"] == b""
        f = fresp(await call(b, "Fetch", 4, fetch_body("z", 0)))
        assert f["error_code"] == 0 and values_of(f["records"]) == [b"a"]
    run_broker(tmp_path, s)


def test_a_new_leader_behind_its_epoch_start_answers_offset_not_available(tmp_path):
    """KIP-207: a leader elected at log end 5 that has the high watermark 3 from its days as a
    follower would answer "latest" 3, below what the old leader said: clients get
    OFFSET_NOT_AVAILABLE (and retry) until the followers' fetches move the HW."""
    from tests.log.batches import make_batch

    async def s(b):
        await create(b, "t")
        p = b.replica_manager.get("t", 0)
        p.make_follower(leader=7, epoch=1, isr=[0, 7], replicas=[0, 7], zk_version=1)
        data = bytearray(make_batch(5))
        data[12:16] = (1).to_bytes(4, "big")            # stamped by the leader of epoch 1
        p.append_as_follower(data)
        p.follower_high_watermark(3)
        p.make_leader(2, [0, 7], [0, 7], zk_version=2, now_ms=0)
        assert p.high_watermark == 3 and p.log.leader_epochs.start_offset_of_latest() == 5

        async def lo(ts, version=1, replica=-1):
            body = {"replica_id": replica, "isolation_level": 0, "topics": [{"name": "t",
                    "partitions": [{"partition_index": 0, "timestamp": ts,
                                    "max_num_offsets": 1}]}]}
            return (await call(b, "ListOffsets", version, body))["topics"][0]["partitions"][0]

        not_yet = ErrorCode.OFFSET_NOT_AVAILABLE
        assert (await lo(-1))["error_code"] == not_yet
        assert (await lo(0, version=5))["error_code"] == not_yet
        assert (await lo(-2))["offset"] == 0                      # earliest: known
        assert (await lo(-1, version=0))["old_style_offsets"] == [3]   # v0: as Kafka
        assert (await lo(-1, replica=-2))["offset"] == 3           # a debug request
        p.update_follower(7, 5, now_ms=1)                          # the follower caught up
        assert (await lo(-1))["offset"] == 5
    run_broker(tmp_path, s)
