"""The transaction coordinator's rules, driven through fake ports (no broker, no disk)."""
from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings, strategies as st

from gregor.broker.txn import log_records
from gregor.broker.txn.coordinator import (TransactionCoordinator, TxnConfig, java_string_hash,
                                           partition_for)
from gregor.broker.txn.state import TxnState
from gregor.protocol.errors import ErrorCode, NotLeaderOrFollowerError

E = ErrorCode
S = TxnState
TP = ("out", 0)
TP2 = ("out", 1)


class FakeLog:
    def __init__(self):
        self.records: dict[int, list] = {}
        self.fail_with = None

    async def append(self, partition, key, value, epoch):
        if self.fail_with is not None:
            raise self.fail_with
        self.records.setdefault(partition, []).append((key, value))


class FakeMarkers:
    def __init__(self):
        self.written = []          # (pid, epoch, commit, partition)
        self.fail = {}             # partition -> error codes to return, in turn

    async def write(self, pid, epoch, commit, coordinator_epoch, partitions):
        out = {}
        for tp in partitions:
            errs = self.fail.get(tp)
            if errs:
                out[tp] = errs.pop(0)
                continue
            self.written.append((pid, epoch, commit, tp))
            out[tp] = E.NONE
        return out


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


def make(num_partitions=4, **cfg):
    ids = iter(range(1000, 2000))
    clock = Clock()
    log, markers = FakeLog(), FakeMarkers()
    c = TransactionCoordinator(TxnConfig(num_partitions=num_partitions,
                                         marker_retry_backoff_ms=1, **cfg),
                               log, markers, lambda: next(ids), clock)
    for p in range(num_partitions):
        c.load_partition(p, 0, [])
    return c, log, markers, clock


def run(coro):
    return asyncio.run(coro)


def test_java_string_hash_matches_javas_values():
    # Values of "...".hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("é") == 233
    assert partition_for("polygenelubricants", 50) == 0      # Utils.abs(MIN_VALUE) is 0
    assert partition_for("hello", 50) == 99162322 % 50


def test_init_gives_a_new_id_then_bumps_the_epoch_each_time():
    async def main():
        c, log, _, _ = make()
        assert await c.init_producer_id("t", 60000) == (E.NONE, 1000, 0)
        assert await c.init_producer_id("t", 60000) == (E.NONE, 1000, 1)
        assert await c.init_producer_id("other", 60000) == (E.NONE, 1001, 0)
        n = c.partition_for("t")
        assert [log_records.decode_key(k) for k, _ in log.records[n]].count("t") == 2
    run(main())


def test_init_rejects_bad_timeouts_and_empty_ids():
    async def main():
        c, _, _, _ = make(max_timeout_ms=1000)
        assert (await c.init_producer_id("t", 1001))[0] == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("t", 0))[0] == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("", 100))[0] == E.INVALID_REQUEST
    run(main())


def test_a_commit_writes_markers_then_completes():
    async def main():
        c, log, markers, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        assert await c.add_partitions("t", pid, ep, [TP, TP2]) == E.NONE
        assert c.verify_partition("t", pid, ep, *TP) == E.NONE
        assert c.verify_partition("t", pid, ep, "out", 7) == E.INVALID_TXN_STATE
        assert await c.end_txn("t", pid, ep, commit=True) == E.NONE
        await c.idle()
        assert sorted(markers.written) == [(pid, ep, True, TP), (pid, ep, True, TP2)]
        assert c.describe("t")["transaction_state"] == "CompleteCommit"
        states = [log_records.decode_value(v).state for _, v in
                  log.records[c.partition_for("t")]]
        assert states == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
        # a retried EndTxn(commit) is fine; an abort now is not
        assert await c.end_txn("t", pid, ep, commit=True) == E.NONE
        assert await c.end_txn("t", pid, ep, commit=False) == E.INVALID_TXN_STATE
    run(main())


def test_end_txn_errors():
    async def main():
        c, _, _, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        assert await c.end_txn("t", pid, ep, commit=True) == E.INVALID_TXN_STATE   # Empty
        assert await c.end_txn("nope", pid, ep, True) == E.INVALID_PRODUCER_ID_MAPPING
        await c.add_partitions("t", pid, ep, [TP])
        assert await c.end_txn("t", pid + 1, ep, True) == E.INVALID_PRODUCER_ID_MAPPING
        assert await c.end_txn("t", pid, ep - 1, True) == E.PRODUCER_FENCED
        assert await c.end_txn("t", pid, ep + 1, True) == E.PRODUCER_FENCED
        assert await c.add_partitions("t", pid, ep - 1, [TP]) == E.PRODUCER_FENCED
        assert await c.add_partitions("t", pid + 9, ep, [TP]) == E.INVALID_PRODUCER_ID_MAPPING
    run(main())


def test_concurrent_transactions_while_markers_are_pending():
    async def main():
        c, _, markers, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        await c.add_partitions("t", pid, ep, [TP])
        markers.fail[TP] = [E.NOT_LEADER_OR_FOLLOWER] * 3
        assert await c.end_txn("t", pid, ep, commit=False) == E.NONE
        assert await c.add_partitions("t", pid, ep, [TP]) == E.CONCURRENT_TRANSACTIONS
        assert (await c.init_producer_id("t", 60000))[0] == E.CONCURRENT_TRANSACTIONS
        assert await c.end_txn("t", pid, ep, commit=False) == E.CONCURRENT_TRANSACTIONS
        assert await c.end_txn("t", pid, ep, commit=True) == E.INVALID_TXN_STATE
        await c.idle()
        assert markers.written == [(pid, ep, False, TP)]
        assert c.describe("t")["transaction_state"] == "CompleteAbort"
        assert await c.add_partitions("t", pid, ep, [TP]) == E.NONE      # next transaction
    run(main())


def test_a_deleted_partition_is_skipped():
    async def main():
        c, _, markers, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        await c.add_partitions("t", pid, ep, [TP, TP2])
        markers.fail[TP2] = [E.UNKNOWN_TOPIC_OR_PARTITION]
        await c.end_txn("t", pid, ep, commit=True)
        await c.idle()
        assert markers.written == [(pid, ep, True, TP)]
        assert c.describe("t")["transaction_state"] == "CompleteCommit"
    run(main())


def test_a_new_instance_fences_the_old_and_aborts_its_transaction():
    async def main():
        c, _, markers, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        await c.add_partitions("t", pid, ep, [TP])
        # the new instance's first try starts the abort and must retry
        assert (await c.init_producer_id("t", 60000))[0] == E.CONCURRENT_TRANSACTIONS
        await c.idle()
        assert markers.written == [(pid, ep + 1, False, TP)]    # marker with the fencing epoch
        assert await c.init_producer_id("t", 60000) == (E.NONE, pid, ep + 2)
        # the old instance is fenced everywhere
        assert await c.end_txn("t", pid, ep, True) == E.PRODUCER_FENCED
        assert await c.add_partitions("t", pid, ep, [TP]) == E.PRODUCER_FENCED
        assert c.verify_partition("t", pid, ep, *TP) == E.INVALID_PRODUCER_EPOCH
    run(main())


def test_kip360_epoch_bump_with_the_current_epoch_and_its_retry():
    async def main():
        c, _, _, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        assert await c.init_producer_id("t", 60000, (pid, ep)) == (E.NONE, pid, ep + 1)
        # the answer was lost; the producer retries with the epoch it had
        assert await c.init_producer_id("t", 60000, (pid, ep)) == (E.NONE, pid, ep + 1)
        # an older epoch than that is fenced
        assert (await c.init_producer_id("t", 60000, (pid, ep - 1)))[0] == E.PRODUCER_FENCED
        assert (await c.init_producer_id("t", 60000, (pid + 5, ep)))[0] == E.PRODUCER_FENCED
    run(main())


def test_epoch_exhaustion_rotates_the_producer_id():
    async def main():
        c, _, _, _ = make()
        _, pid, _ = await c.init_producer_id("t", 60000)
        md = next(iter(c.transactional_ids()))
        md.producer_epoch = 32766 - 1
        assert await c.init_producer_id("t", 60000) == (E.NONE, pid, 32766)
        err, new_pid, ep = await c.init_producer_id("t", 60000)
        assert (err, ep) == (E.NONE, 0) and new_pid != pid
    run(main())


def test_timed_out_transactions_are_aborted_and_their_producer_fenced():
    async def main():
        c, _, markers, clock = make()
        _, pid, ep = await c.init_producer_id("t", 5000)
        await c.add_partitions("t", pid, ep, [TP])
        clock.now += 4000
        assert await c.abort_timed_out() == 0
        clock.now += 2000
        assert await c.abort_timed_out() == 1
        await c.idle()
        assert markers.written == [(pid, ep + 1, False, TP)]
        assert c.describe("t")["transaction_state"] == "CompleteAbort"
        assert await c.end_txn("t", pid, ep, True) == E.PRODUCER_FENCED
        assert await c.init_producer_id("t", 5000) == (E.NONE, pid, ep + 2)
    run(main())


def test_ids_expire_after_their_idle_time():
    async def main():
        c, log, _, clock = make(id_expiration_ms=10_000)
        await c.init_producer_id("t", 5000)
        clock.now += 9_000
        assert await c.expire_transactional_ids() == 0
        clock.now += 1_000
        assert await c.expire_transactional_ids() == 1
        assert c.describe("t")["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
        assert log.records[c.partition_for("t")][-1][1] is None      # a tombstone
    run(main())


def test_a_failed_log_write_changes_nothing():
    async def main():
        c, log, _, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        log.fail_with = NotLeaderOrFollowerError("moved")
        assert await c.add_partitions("t", pid, ep, [TP]) == E.NOT_COORDINATOR
        assert c.describe("t")["transaction_state"] == "Empty"
        log.fail_with = None
        assert await c.add_partitions("t", pid, ep, [TP]) == E.NONE
    run(main())


def test_a_failed_fence_does_not_bump_the_epoch_twice():
    async def main():
        c, log, _, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        await c.add_partitions("t", pid, ep, [TP])
        log.fail_with = NotLeaderOrFollowerError("moved")
        assert (await c.init_producer_id("t", 60000))[0] == E.NOT_COORDINATOR
        log.fail_with = None
        assert (await c.init_producer_id("t", 60000))[0] == E.CONCURRENT_TRANSACTIONS
        await c.idle()
        assert await c.init_producer_id("t", 60000) == (E.NONE, pid, ep + 2)
    run(main())


def test_not_coordinator_and_loading():
    async def main():
        c, _, _, _ = make()
        n = c.partition_for("t")
        c.unload_partition(n)
        assert (await c.init_producer_id("t", 1000))[0] == E.NOT_COORDINATOR
        c.partitions[n] = type(c.partitions[(n + 1) % 4])(epoch=1)   # loading
        assert (await c.init_producer_id("t", 1000))[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    run(main())


def test_reload_finishes_a_transaction_a_crash_left_in_prepare_commit():
    async def main():
        c, log, markers, _ = make()
        _, pid, ep = await c.init_producer_id("t", 60000)
        await c.add_partitions("t", pid, ep, [TP, TP2])
        markers.fail[TP] = [E.NOT_LEADER_OR_FOLLOWER] * 1000     # the "crash" before markers
        await c.end_txn("t", pid, ep, commit=True)
        n = c.partition_for("t")
        records = list(log.records[n])
        c.close()
        # a new coordinator (after restart) loads the same records
        c2, log2, markers2, _ = make()
        c2.load_partition(n, 1, records)
        assert c2.describe("t")["transaction_state"] == "PrepareCommit"
        await c2.idle()
        assert sorted(markers2.written) == [(pid, ep, True, TP), (pid, ep, True, TP2)]
        assert c2.describe("t")["transaction_state"] == "CompleteCommit"
        # the producer keeps its epoch; an older one stays fenced
        assert await c2.end_txn("t", pid, ep - 1, True) == E.PRODUCER_FENCED
    run(main())


def test_describe_and_list():
    async def main():
        c, _, _, clock = make()
        _, pid, ep = await c.init_producer_id("a", 60000)
        await c.init_producer_id("b", 60000)
        await c.add_partitions("a", pid, ep, [TP])
        d = c.describe("a")
        assert d["transaction_state"] == "Ongoing" and d["topics"] == [
            {"topic": "out", "partitions": [0]}]
        assert d["transaction_start_time_ms"] == clock.now
        listed, unknown = c.list(states=["Ongoing", "Bogus"])
        assert [x["transactional_id"] for x in listed] == ["a"] and unknown == ["Bogus"]
        assert {x["transactional_id"] for x in c.list()[0]} == {"a", "b"}
        assert c.list(producer_ids=[pid])[0][0]["transactional_id"] == "a"
        clock.now += 100
        assert c.list(min_duration_ms=50)[0][0]["transactional_id"] == "a"
        assert c.list(min_duration_ms=500)[0] == []
    run(main())


values = st.builds(
    lambda pid, ep, to, state, parts, ts: (pid, ep, to, state, parts, ts),
    st.integers(0, 2**63 - 1), st.integers(0, 32767), st.integers(1, 2**31 - 1),
    st.sampled_from([s for s in S if s != S.PREPARE_EPOCH_FENCE]),
    st.frozensets(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 100)), max_size=6),
    st.integers(-1, 2**50))


@settings(max_examples=200)
@given(values, st.text(max_size=20))
def test_log_records_round_trip(v, tid):
    from gregor.broker.txn.state import TxnTransit
    pid, ep, to, state, parts, ts = v
    t = TxnTransit(pid, -1, ep, -1, to, state, parts, ts, ts + 1)
    assert log_records.decode_value(log_records.encode_value(t)) == t
    assert log_records.decode_key(log_records.encode_key(tid)) == tid


def test_log_value_bytes_are_kafkas_layout():
    from gregor.broker.txn.state import TxnTransit
    t = TxnTransit(7, -1, 3, -1, 60000, S.ONGOING, frozenset({("t", 1)}), 10, 20)
    b = log_records.encode_value(t)
    # version 0: int16 version, int64 pid, int16 epoch, int32 timeout, int8 status,
    # array(int32 count, string topic, array int32), int64 last update, int64 start
    import struct
    expect = (struct.pack(">hqhib", 0, 7, 3, 60000, 1) + struct.pack(">i", 1)
              + struct.pack(">h", 1) + b"t" + struct.pack(">ii", 1, 1)
              + struct.pack(">qq", 20, 10))
    assert b == expect
    assert log_records.encode_key("ab") == struct.pack(">hh", 0, 2) + b"ab"


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x00\x09abc", b"\x00\x00\x00\x05ab"])
def test_bad_keys_are_decode_errors(bad):
    from gregor.protocol.primitives import DecodeError
    with pytest.raises(DecodeError):
        log_records.decode_key(bad)
