"""Produce semantics, handler by handler, on an in-process broker."""
import asyncio

import pytest

from gregor.broker.server import NO_RESPONSE, CloseConnection
from gregor.protocol.errors import ErrorCode

from .handler_harness import (batch, call, committed, create, fetch_body, fresp, presp,
                              produce_body, run_broker, start_call, values_of)


def test_acks1_appends_and_fetch_returns_the_batch(tmp_path):
    async def s(b):
        await create(b, "t")
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a", b"b"))))
        assert (r["error_code"], r["base_offset"], r["log_append_time_ms"]) == (0, 0, -1)
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"c"))))
        assert r["base_offset"] == 2 and r["log_start_offset"] == 0
        await committed(b)
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 0)))
        assert f["error_code"] == 0 and f["high_watermark"] == 3
        assert values_of(f["records"]) == [b"a", b"b", b"c"]
    run_broker(tmp_path, s)


def test_invalid_required_acks(tmp_path):
    async def s(b):
        await create(b, "t")
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=2)))
        assert r["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS
        assert b.replica_manager.get("t", 0).log.log_end_offset == 0
    run_broker(tmp_path, s)


def test_unknown_topic_and_partition(tmp_path):
    async def s(b):
        r = presp(await call(b, "Produce", 8, produce_body("nope", batch(b"a"))))
        assert r["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert "auto.create.topics.enable" in r["error_message"]
        await create(b, "t")
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), partition=3)))
        assert r["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run_broker(tmp_path, s, **{"auto.create.topics.enable": "false"})


def test_auto_create_on_produce(tmp_path):
    async def s(b):
        r = presp(await call(b, "Produce", 8, produce_body("fresh", batch(b"a"))))
        assert r["error_code"] == 0 and b.store.get("fresh").partitions == 2
    run_broker(tmp_path, s, **{"num.partitions": "2"})


def test_errors_are_per_partition(tmp_path):
    async def s(b):
        await create(b, "t", 3, {"max.message.bytes": 200})
        corrupt = bytearray(batch(b"x"))
        corrupt[-1] ^= 0xFF                      # breaks the CRC
        two = batch(b"1") + batch(b"2")
        resp = await call(b, "Produce", 8, produce_body(
            "t", batch(b"ok"), extra=[(1, bytes(corrupt)), (2, two)]))
        codes = [presp(resp, i)["error_code"] for i in range(3)]
        assert codes == [0, ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD]
        big = presp(await call(b, "Produce", 8, produce_body("t", batch(b"x" * 500))))
        assert big["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
        assert "max.message.bytes" in big["error_message"]
        assert [b.replica_manager.get("t", i).log.log_end_offset for i in range(3)] == [1, 0, 0]
    run_broker(tmp_path, s)


def test_acks0_no_response_and_close_on_error(tmp_path):
    async def s(b):
        await create(b, "t")
        assert start_call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=0)) is NO_RESPONSE
        with pytest.raises(CloseConnection, match="UNKNOWN_TOPIC_OR_PARTITION"):
            start_call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=0, partition=7))
        assert b.replica_manager.get("t", 0).log.log_end_offset == 1
    run_broker(tmp_path, s)


def test_acks_all_waits_in_the_purgatory_for_the_high_watermark(tmp_path):
    async def s(b):
        await create(b, "t")
        fut = start_call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=-1))
        # acks=all waits for the group commit's fsync, which has not run yet
        assert isinstance(fut, asyncio.Future) and not fut.done()
        assert b.replica_manager.produce_purgatory.delayed() == 1
        resp = await fut
        assert presp(resp)["error_code"] == 0 and presp(resp)["base_offset"] == 0
        assert b.replica_manager.produce_purgatory.delayed() == 0
        assert b.replica_manager.flushes >= 1
    run_broker(tmp_path, s)


def test_acks_all_without_fsync_completes_through_the_same_path(tmp_path):
    async def s(b):
        await create(b, "t")
        resp = await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=-1))
        assert presp(resp)["error_code"] == 0
        assert b.replica_manager.get("t", 0).high_watermark == 1
    run_broker(tmp_path, s, **{"gregor.fsync.acks.all": "false"})


def test_acks1_records_are_visible_before_the_fsync(tmp_path):
    async def s(b):
        await create(b, "t")
        p = b.replica_manager.get("t", 0)
        p.mark_durable = lambda offset: False                   # no fsync ever completes
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=1)))
        assert r["error_code"] == 0 and p.high_watermark == 1
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 0)))
        assert values_of(f["records"]) == [b"a"]
    run_broker(tmp_path, s)


def test_acks1_appends_wait_for_a_deferred_round_or_ride_an_acks_all_one(tmp_path, monkeypatch):
    from gregor.broker import replica_manager
    monkeypatch.setattr(replica_manager, "ACKS1_SYNC_DELAY_S", 3600)

    async def s(b):
        await create(b, "t")
        rm, p = b.replica_manager, b.replica_manager.get("t", 0)
        for v in (b"a", b"b"):
            await call(b, "Produce", 8, produce_body("t", batch(v), acks=1))
        for _ in range(5):
            await asyncio.sleep(0)
        assert rm.flushes == 0 and p.durable_offset == 0       # no round per request
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"c"), acks=-1)))
        assert r["error_code"] == 0 and rm.flushes == 1 and p.durable_offset == 3
    run_broker(tmp_path, s)


def test_acks1_data_is_fsynced_by_the_deferred_round(tmp_path, monkeypatch):
    from gregor.broker import replica_manager
    monkeypatch.setattr(replica_manager, "ACKS1_SYNC_DELAY_S", 0.01)

    async def s(b):
        await create(b, "t")
        rm, p = b.replica_manager, b.replica_manager.get("t", 0)
        for v in (b"a", b"b"):
            await call(b, "Produce", 8, produce_body("t", batch(v), acks=1))
        for _ in range(1000):                     # bound only: the round comes in ~10 ms
            if p.durable_offset == 2:
                break
            await asyncio.sleep(0.01)
        assert p.durable_offset == 2 and rm.flushes >= 1
    run_broker(tmp_path, s)


def test_not_enough_replicas_refuses_before_appending(tmp_path):
    async def s(b):
        await create(b, "t", configs={"min.insync.replicas": 2})
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=-1)))
        assert r["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS
        assert "min.insync.replicas=2" in r["error_message"]
        assert b.replica_manager.get("t", 0).log.log_end_offset == 0
        # acks=1 does not need the ISR
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=1)))
        assert r["error_code"] == 0
    run_broker(tmp_path, s)


def test_not_enough_replicas_after_append(tmp_path):
    async def s(b):
        await create(b, "t")
        fut = start_call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=-1))
        b.replica_manager.get("t", 0).isr = []   # the ISR shrinks while the write waits
        r = presp(await fut)
        assert r["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert b.replica_manager.get("t", 0).log.log_end_offset == 1   # it was written
    run_broker(tmp_path, s)


def test_request_timed_out_when_the_high_watermark_never_comes(tmp_path):
    async def s(b):
        await create(b, "t")
        p = b.replica_manager.get("t", 0)
        p.mark_durable = lambda offset: False                   # an fsync that never ends
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"), acks=-1,
                                                           timeout_ms=50)))
        assert r["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        assert b.replica_manager.produce_purgatory.expired == 1
    run_broker(tmp_path, s)


def test_log_append_time_topics_return_the_append_time(tmp_path):
    async def s(b):
        await create(b, "t", configs={"message.timestamp.type": "LogAppendTime"})
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a", ts=1000))))
        assert r["error_code"] == 0 and r["log_append_time_ms"] > 1_000_000
    run_broker(tmp_path, s)


def test_invalid_timestamp_when_configured(tmp_path):
    async def s(b):
        await create(b, "t", configs={"message.timestamp.before.max.ms": 60_000})
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a", ts=1000))))
        assert r["error_code"] == ErrorCode.INVALID_TIMESTAMP
        r = presp(await call(b, "Produce", 8, produce_body("t", batch(b"a"))))
        assert r["error_code"] == 0
    run_broker(tmp_path, s)


def test_produce_v3_rejects_legacy_magic_and_v2_rejects_batches(tmp_path):
    async def s(b):
        await create(b, "t")
        legacy = bytearray(batch(b"a"))
        legacy[16] = 1
        r = presp(await call(b, "Produce", 3, produce_body("t", bytes(legacy))))
        assert r["error_code"] == ErrorCode.INVALID_RECORD
        r = presp(await call(b, "Produce", 2, produce_body("t", batch(b"a"))))
        assert r["error_code"] == ErrorCode.INVALID_RECORD
    run_broker(tmp_path, s)


# -- idempotent producers ------------------------------------------------------------------

async def _init_pid(b):
    r = await call(b, "InitProducerId", 1, {"transactional_id": None,
                                             "transaction_timeout_ms": 60000})
    assert r["error_code"] == 0
    return r["producer_id"], r["producer_epoch"]


def test_idempotent_retry_returns_original_offsets_without_appending(tmp_path):
    async def s(b):
        await create(b, "t")
        pid, epoch = await _init_pid(b)
        first = batch(b"a", b"b", producer_id=pid, producer_epoch=epoch, base_sequence=0)
        r1 = presp(await call(b, "Produce", 8, produce_body("t", first, acks=-1)))
        r2 = presp(await call(b, "Produce", 8, produce_body("t", first, acks=-1)))
        assert r1["error_code"] == r2["error_code"] == 0
        assert r2["base_offset"] == r1["base_offset"] == 0
        assert b.replica_manager.get("t", 0).log.log_end_offset == 2
        nxt = batch(b"c", producer_id=pid, producer_epoch=epoch, base_sequence=2)
        assert presp(await call(b, "Produce", 8, produce_body("t", nxt)))["base_offset"] == 2
    run_broker(tmp_path, s)


def test_sequence_gap_and_old_epoch(tmp_path):
    async def s(b):
        await create(b, "t")
        pid, _ = await _init_pid(b)
        ok = batch(b"a", producer_id=pid, producer_epoch=1, base_sequence=0)
        assert presp(await call(b, "Produce", 8, produce_body("t", ok)))["error_code"] == 0
        gap = batch(b"b", producer_id=pid, producer_epoch=1, base_sequence=5)
        r = presp(await call(b, "Produce", 8, produce_body("t", gap)))
        assert r["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        old = batch(b"c", producer_id=pid, producer_epoch=0, base_sequence=1)
        r = presp(await call(b, "Produce", 8, produce_body("t", old)))
        assert r["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert b.replica_manager.get("t", 0).log.log_end_offset == 1
    run_broker(tmp_path, s)


def test_producer_state_and_ids_survive_a_restart(tmp_path):
    async def first(b):
        await create(b, "t")
        pid, epoch = await _init_pid(b)
        data = batch(b"a", producer_id=pid, producer_epoch=epoch, base_sequence=0)
        assert presp(await call(b, "Produce", 8, produce_body("t", data)))["error_code"] == 0
        return pid, data

    pid, data = run_broker(tmp_path, first)

    async def second(b):
        r = presp(await call(b, "Produce", 8, produce_body("t", data)))     # a late retry
        assert (r["error_code"], r["base_offset"]) == (0, 0)
        assert b.replica_manager.get("t", 0).log.log_end_offset == 1
        new_pid, _ = await _init_pid(b)
        assert new_pid > pid
    run_broker(tmp_path, second)


def test_transactional_init_goes_to_the_transaction_coordinator(tmp_path):
    async def s(b):
        r = await call(b, "InitProducerId", 1, {"transactional_id": "tx",
                                                 "transaction_timeout_ms": 60000})
        assert (r["error_code"], r["producer_epoch"]) == (0, 0)
        r2 = await call(b, "InitProducerId", 1, {"transactional_id": "tx",
                                                  "transaction_timeout_ms": 60000})
        assert (r2["producer_id"], r2["producer_epoch"]) == (r["producer_id"], 1)
    run_broker(tmp_path, s)


def test_a_producer_bumping_its_own_epoch_restarts_at_sequence_0(tmp_path):
    async def s(b):
        await create(b, "t")
        pid, _ = await _init_pid(b)
        for epoch, seq, value in ((0, 0, b"a"), (0, 1, b"b"), (1, 0, b"c")):
            data = batch(value, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
            r = presp(await call(b, "Produce", 8, produce_body("t", data)))
            assert r["error_code"] == 0, (epoch, seq, r)
        # every InitProducerId without a transactional id hands out a new id (as Kafka does)
        assert (await _init_pid(b))[0] != pid
    run_broker(tmp_path, s)


def test_appends_do_not_recheck_writes_waiting_for_the_fsync(tmp_path):
    # n pipelined acks=all requests on one partition: each append used to re-check every
    # waiting one (O(n^2)); they wait for the fsync round, so only its end checks them.
    async def s(b):
        await create(b, "t")
        purgatory = b.replica_manager.produce_purgatory
        checks = []
        real = purgatory.check_and_complete

        def counting(key):
            checks.append(key)
            return real(key)
        purgatory.check_and_complete = counting
        futs = [start_call(b, "Produce", 8, produce_body("t", batch(b"v%d" % i), acks=-1))
                for i in range(50)]
        assert purgatory.delayed() == 50 and checks == []
        resps = await asyncio.gather(*futs)
        assert [presp(r)["base_offset"] for r in resps] == list(range(50))
        assert 1 <= len(checks) <= 3       # the fsync round(s) that made them durable
    run_broker(tmp_path, s)
