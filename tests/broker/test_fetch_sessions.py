"""KIP-227 fetch sessions on an in-process broker: full, incremental, close, errors, purgatory."""
import asyncio

from gregor.protocol.errors import ErrorCode

from .handler_harness import (batch, call, committed, create, produce_body, run_broker,
                              start_call, values_of)


def body(parts, session_id=0, epoch=0, forgotten=(), max_wait_ms=0, min_bytes=1,
         isolation=0):
    """parts: {(topic, partition): fetch_offset}."""
    topics: dict = {}
    for (t, p), off in parts.items():
        topics.setdefault(t, []).append({"partition": p, "fetch_offset": off,
                                         "log_start_offset": -1,
                                         "partition_max_bytes": 1 << 20})
    forget: dict = {}
    for t, p in forgotten:
        forget.setdefault(t, []).append(p)
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": 1 << 22, "isolation_level": isolation, "session_id": session_id,
            "session_epoch": epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": ps}
                                      for t, ps in forget.items()],
            "rack_id": ""}


def by_tp(resp):
    return {(t["topic"], p["partition_index"]): p for t in resp["responses"]
            for p in t["partitions"]}


async def produce(b, topic, partition, *values):
    r = await call(b, "Produce", 8, produce_body(topic, batch(*values), partition=partition))
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    await committed(b)


ALL4 = {("t", p): 0 for p in range(4)}


def test_full_then_incremental_carries_only_changes(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        await produce(b, "t", 1, b"one")
        full = await call(b, "Fetch", 11, body(ALL4))
        sid = full["session_id"]
        assert full["error_code"] == 0 and sid > 0
        assert set(by_tp(full)) == set(ALL4)          # a full response names every partition
        assert values_of(by_tp(full)[("t", 1)]["records"]) == [b"one"]

        # the client moved past "one": it sends only that partition, at its new offset
        inc = await call(b, "Fetch", 11, body({("t", 1): 1}, sid, 1))
        assert (inc["error_code"], inc["session_id"]) == (0, sid)
        assert by_tp(inc) == {}                       # nothing changed anywhere

        await produce(b, "t", 3, b"three")
        inc = await call(b, "Fetch", 11, body({}, sid, 2))
        got = by_tp(inc)
        assert list(got) == [("t", 3)] and values_of(got[("t", 3)]["records"]) == [b"three"]
        assert got[("t", 3)]["high_watermark"] == 1

        # not advanced by the client: partition 3 is served again from the cached offset 0
        inc = await call(b, "Fetch", 11, body({}, sid, 3))
        assert values_of(by_tp(inc)[("t", 3)]["records"]) == [b"three"]
        assert b.fetch_sessions.stats["incremental"] == 3
    run_broker(tmp_path, s)


def test_epoch_and_id_errors_as_kafka_answers_them(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        sid = (await call(b, "Fetch", 11, body(ALL4)))["session_id"]
        wrong = await call(b, "Fetch", 11, body({}, sid, 5))
        assert (wrong["error_code"], wrong["session_id"], wrong["responses"]) == \
            (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
        ok = await call(b, "Fetch", 11, body({}, sid, 1))   # the session survived the error
        assert (ok["error_code"], ok["session_id"]) == (0, sid)
        replay = await call(b, "Fetch", 11, body({}, sid, 1))
        assert replay["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        missing = await call(b, "Fetch", 11, body({}, sid + 1, 1))
        assert (missing["error_code"], missing["session_id"]) == \
            (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    run_broker(tmp_path, s)


def test_close_with_final_epoch_and_sessionless_fetch(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        sid = (await call(b, "Fetch", 11, body(ALL4)))["session_id"]
        closing = await call(b, "Fetch", 11, body(ALL4, sid, -1))
        assert (closing["error_code"], closing["session_id"]) == (0, 0)
        assert set(by_tp(closing)) == set(ALL4)        # answered as a sessionless fetch
        gone = await call(b, "Fetch", 11, body({}, sid, 1))
        assert gone["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        plain = await call(b, "Fetch", 11, body(ALL4, 0, -1))
        assert plain["session_id"] == 0 and set(by_tp(plain)) == set(ALL4)
        assert len(b.fetch_sessions.cache) == 0
        # a new full request naming an old session replaces it
        sid = (await call(b, "Fetch", 11, body(ALL4)))["session_id"]
        sid2 = (await call(b, "Fetch", 11, body(ALL4, sid, 0)))["session_id"]
        assert sid2 != sid and len(b.fetch_sessions.cache) == 1
    run_broker(tmp_path, s)


def test_added_and_forgotten_partitions(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        await create(b, "u", partitions=1)
        await produce(b, "t", 2, b"x")
        sid = (await call(b, "Fetch", 11, body({("t", 0): 0, ("t", 1): 0})))["session_id"]
        # added: always answered once (its state was never sent); forgotten: never again
        inc = await call(b, "Fetch", 11, body({("t", 2): 1, ("u", 0): 0}, sid, 1,
                                              forgotten=[("t", 1)]))
        assert set(by_tp(inc)) == {("t", 2), ("u", 0)}
        await produce(b, "t", 1, b"forgotten")
        inc = await call(b, "Fetch", 11, body({}, sid, 2))
        assert by_tp(inc) == {}
        # forgetting everything closes the session
        inc = await call(b, "Fetch", 11, body({}, sid, 3, forgotten=[
            ("t", 0), ("t", 2), ("u", 0)]))
        assert (inc["error_code"], inc["session_id"]) == (0, 0)
        assert len(b.fetch_sessions.cache) == 0
    run_broker(tmp_path, s)


def test_log_start_moves_and_errors_are_reported(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        await produce(b, "t", 0, b"a", b"b")
        sid = (await call(b, "Fetch", 11, body({("t", 0): 2, ("gone", 0): 0})))["session_id"]
        inc = await call(b, "Fetch", 11, body({}, sid, 1))
        # the unknown partition's error is in every response; the idle one in none
        assert list(by_tp(inc)) == [("gone", 0)]
        assert by_tp(inc)[("gone", 0)]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        r = await call(b, "DeleteRecords", 1, {"topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "offset": 1}]}], "timeout_ms": 1000})
        assert r["topics"][0]["partitions"][0]["error_code"] == 0
        inc = await call(b, "Fetch", 11, body({}, sid, 2))
        assert by_tp(inc)[("t", 0)]["log_start_offset"] == 1
    run_broker(tmp_path, s)


def test_long_poll_is_woken_by_a_partition_the_request_did_not_name(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        sid = (await call(b, "Fetch", 11, body(ALL4)))["session_id"]
        fut = start_call(b, "Fetch", 11, body({}, sid, 1, max_wait_ms=10_000))
        assert isinstance(fut, asyncio.Future) and not fut.done()
        await produce(b, "t", 2, b"wake")
        resp = await fut
        got = by_tp(resp)
        assert resp["session_id"] == sid and list(got) == [("t", 2)]
        assert values_of(got[("t", 2)]["records"]) == [b"wake"]
        assert b.replica_manager.fetch_purgatory.expired == 0
        # an idle incremental long poll expires empty and keeps the session
        resp = await call(b, "Fetch", 11, body({("t", 2): 1}, sid, 2, max_wait_ms=20))
        assert (resp["session_id"], resp["responses"]) == (sid, [])
        assert b.replica_manager.fetch_purgatory.expired == 1
    run_broker(tmp_path, s)


def test_full_cache_answers_without_a_session(tmp_path):
    async def s(b):
        await create(b, "t", partitions=4)
        first = await call(b, "Fetch", 11, body(ALL4))
        second = await call(b, "Fetch", 11, body(ALL4))
        assert first["session_id"] > 0
        assert second["session_id"] == 0 and set(by_tp(second)) == set(ALL4)
        assert b.fetch_sessions.stats["refused"] == 1
    run_broker(tmp_path, s, **{"max.incremental.fetch.session.cache.slots": 1})


def test_read_committed_session_reports_lso_moves(tmp_path):
    async def s(b):
        await create(b, "t", partitions=1)
        await produce(b, "t", 0, b"a")
        sid = (await call(b, "Fetch", 11, body({("t", 0): 1}, isolation=1)))["session_id"]
        inc = await call(b, "Fetch", 11, body({}, sid, 1, isolation=1))
        assert by_tp(inc) == {}
        await produce(b, "t", 0, b"b")
        got = by_tp(await call(b, "Fetch", 11, body({}, sid, 2, isolation=1)))
        assert got[("t", 0)]["last_stable_offset"] == 2
        assert values_of(got[("t", 0)]["records"]) == [b"b"]
    run_broker(tmp_path, s)


def test_long_poll_below_min_bytes_answers_what_it_read_and_what_came(tmp_path):
    """A waiting incremental fetch re-checks only the partitions it is told about: at the
    end it answers the partition read first (below min_bytes) and the ones that changed
    during the wait, nothing else, and keeps the bytes count across them."""
    async def s(b):
        await create(b, "t", partitions=4)
        sid = (await call(b, "Fetch", 11, body(ALL4)))["session_id"]
        await produce(b, "t", 1, b"one")
        fut = start_call(b, "Fetch", 11, body({}, sid, 1, max_wait_ms=60_000,
                                              min_bytes=1 << 20))
        assert not fut.done()
        await produce(b, "t", 3, b"three")
        await produce(b, "t", 3, b"four")
        assert not fut.done()                         # still below min_bytes
        op = next(iter(b.replica_manager.fetch_purgatory._waiting))
        assert op.available > 0 and set(op._new_bytes) == {("t", 3)}
        op.min_bytes = op.available                   # now enough: the next change answers
        await produce(b, "t", 0, b"zero")
        got = by_tp(await fut)
        assert sorted(got) == [("t", 0), ("t", 1), ("t", 3)]
        assert values_of(got[("t", 1)]["records"]) == [b"one"]
        assert values_of(got[("t", 3)]["records"]) == [b"three", b"four"]
        assert values_of(got[("t", 0)]["records"]) == [b"zero"]
    run_broker(tmp_path, s)
