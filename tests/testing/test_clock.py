"""Broker(clock="manual"): the coordinators' timers move only with clock.advance()."""
from __future__ import annotations

import time

import pytest

from gregor.testing import Broker, ManualClock
from gregor.testing.wire import WireClient

DAY = 86400.0


@pytest.fixture(scope="module")
def broker():
    with Broker({"group.initial.rebalance.delay.ms": 3000}, clock="manual") as b:
        yield b


def wait_until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the broker"
        time.sleep(0.01)


def join(c: WireClient, group: str, session_ms: int = 10000) -> tuple[str, int]:
    """JoinGroup + SyncGroup of a one-member group; (member id, generation)."""
    body = {"group_id": group, "session_timeout_ms": session_ms,
            "rebalance_timeout_ms": session_ms, "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}
    resp = c.request("JoinGroup", 4, body)
    if resp["error_code"] == 79:        # MEMBER_ID_REQUIRED: join again with the id given
        body["member_id"] = resp["member_id"]
        c.send("JoinGroup", 4, body)
        return body["member_id"], -1
    raise AssertionError(resp)


def test_initial_delay_and_session_timeout_follow_the_manual_clock(broker):
    clock = broker.clock
    with WireClient(broker.port, timeout=30) as c:
        c.request("FindCoordinator", 1, {"key": "sessions", "key_type": 0})
        member, _ = join(c, "sessions")
        # the first generation waits group.initial.rebalance.delay.ms (3 s) of clock time
        wait_until(lambda: clock.next_due() == pytest.approx(3.0))
        clock.advance(2.9)
        clock.advance(0.2)
        _corr, joined = c.receive("JoinGroup", 4)
        assert joined["error_code"] == 0 and joined["leader"] == member
        gen = joined["generation_id"]
        sync = c.request("SyncGroup", 2, {"group_id": "sessions", "generation_id": gen,
                                          "member_id": member,
                                          "assignments": [{"member_id": member,
                                                           "assignment": b""}]})
        assert sync["error_code"] == 0
        heartbeat = {"group_id": "sessions", "generation_id": gen, "member_id": member}
        clock.advance(9.9)                 # session.timeout.ms is 10 s: still a member
        assert c.request("Heartbeat", 1, heartbeat)["error_code"] == 0
        clock.advance(9.9)                 # the heartbeat restarted the session
        assert c.request("Heartbeat", 1, heartbeat)["error_code"] == 0
        clock.advance(10.001)              # no heartbeat for a whole session: removed
        assert c.request("Heartbeat", 1, heartbeat)["error_code"] == 25   # UNKNOWN_MEMBER_ID
        groups = c.request("DescribeGroups", 0, {"groups": ["sessions"]})["groups"]
        assert groups[0]["group_state"] == "Empty" and groups[0]["members"] == []


def test_offsets_of_an_empty_group_expire_after_the_retention(broker):
    broker.create_topic("t")
    with WireClient(broker.port) as c:
        c.request("FindCoordinator", 1, {"key": "retained", "key_type": 0})
        commit = c.request("OffsetCommit", 2, {
            "group_id": "retained", "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 42, "committed_metadata": ""}]}]})
        assert commit["topics"][0]["partitions"][0]["error_code"] == 0

        def committed():
            resp = c.request("OffsetFetch", 1, {"group_id": "retained", "topics": [
                {"name": "t", "partition_indexes": [0]}]})
            return resp["topics"][0]["partitions"][0]["committed_offset"]
        # offsets.retention.minutes: 7 days; checked every offsets.retention.check.interval.ms
        broker.clock.advance(7 * DAY - 3600)
        assert committed() == 42
        broker.clock.advance(3600 + 600 + 1)
        assert committed() == -1


def test_an_open_transaction_is_aborted_after_its_timeout(broker):
    from confluent_kafka import KafkaException, Producer
    broker.create_topic("txn-timeout")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers,
                  "transactional.id": "slow-writer", "transaction.timeout.ms": 60000})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("txn-timeout", b"never committed")
    p.flush(20)

    def state():
        with WireClient(broker.port) as c:
            resp = c.request("DescribeTransactions", 0, {"transactional_ids": ["slow-writer"]})
        return resp["transaction_states"][0]["transaction_state"]
    assert state() == "Ongoing"
    broker.clock.advance(59)
    assert state() == "Ongoing"
    # past transaction.timeout.ms, at the next abort check (every 10 s of clock time); the
    # abort it starts writes to the log, which takes real time
    broker.clock.advance(12)
    wait_until(lambda: state() in ("PrepareAbort", "CompleteAbort"))
    with pytest.raises(KafkaException):
        p.commit_transaction(20)


def test_manual_clock_alone():
    clock = ManualClock(start=1000.0)
    fired = []
    assert clock.time() == 1000.0 and clock.monotonic() == 0.0
    clock.advance(5)
    assert clock.time() == 1005.0 and clock.time_ms() == 1_005_000
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="clock must be"):
        Broker(clock="sundial")
    assert fired == []
