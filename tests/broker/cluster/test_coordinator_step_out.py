"""A broker that steps out of the cluster stops acting as a coordinator.

One broker of a ZooKeeper cluster, in this process (its coordinators' timers on a ManualClock,
so time past a transaction's timeout is the test's to give), coordinating two open
transactions (confluent-kafka producers) and a consumer group's committed offsets. It steps out
as it does when its ZooKeeper session is lost. From then on: its transaction and group
coordinators hold nothing, the timed-out-transaction job writes no abort however much time
passes, and a write still in flight from the old state is refused before it reaches the log.
Back in service (the session survived: it is restated as the leader it was) it loads the state
from the log again: the live producer commits, unfenced, and the group's offsets are there.
"""
from __future__ import annotations

import asyncio
import uuid

import pytest

from gregor.protocol.errors import ErrorCode
from gregor.testing import Broker

pytestmark = pytest.mark.timeout(180)

TXN_TOPIC, GROUPS_TOPIC = "__transaction_state", "__consumer_offsets"
SHORT_MS = 10_000                  # the transaction the stale job would abort
LONG_MS = 600_000                  # the live producer's
# Liveness waits, generous: the session's own timeout many times over, on a loaded machine.
SESSION_MS = 6000
WAIT_S = 20 * SESSION_MS / 1000


def _wait(b: Broker, check, what: str, timeout: float = WAIT_S) -> None:
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if b.run_on_loop(check):
            return
        time.sleep(0.05)
    raise AssertionError(f"not {what} within {timeout:.0f}s")


def _log_end(x, topic: str, partition: int = 0) -> int:
    return x.replica_manager.get(topic, partition).log.log_end_offset


def _run(b: Broker, coro_fn):
    """coro_fn(broker)'s coroutine, awaited on the broker's loop; its result."""
    return asyncio.run_coroutine_threadsafe(coro_fn(b.broker), b._loop).result(WAIT_S)


def test_a_stepped_out_broker_stops_coordinating(zookeeper_server, tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    b = Broker({"zookeeper.connect": f"{zookeeper_server.hosts}/so-{uuid.uuid4().hex[:12]}",
                "broker.id": 0, "zookeeper.session.timeout.ms": SESSION_MS,
                "offsets.topic.replication.factor": 1,
                "transaction.state.log.replication.factor": 1,
                "transaction.state.log.min.isr": 1},
               data_dir=tmp_path / "b0", clock="manual").start()
    try:
        _wait(b, lambda x: x.cluster.controller.active and x.cluster.snapshot.brokers,
              "the controller")
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("t", 1, 1)], operation_timeout=30).values():
            f.result()
        producers = {}
        for tid, timeout in (("short", SHORT_MS), ("live", LONG_MS)):
            p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid,
                          "transaction.timeout.ms": timeout})
            p.init_transactions(WAIT_S)
            p.begin_transaction()
            for i in range(5):
                p.produce("t", b"%s-%d" % (tid.encode(), i), partition=0)
            assert p.flush(WAIT_S) == 0
            producers[tid] = p
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g",
                      "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("t", 0, 3)], asynchronous=False)
        c.close()
        _wait(b, lambda x: "g" in x.groups.coordinator.groups, "the group loaded")

        coord = b.run_on_loop(lambda x: x.txn.coordinator)
        assert set(b.run_on_loop(lambda x: {md.transactional_id for md in
                                            coord.transactional_ids()})) == {"short", "live"}
        stale_part = b.run_on_loop(lambda x: coord.partitions[0])
        ends = b.run_on_loop(lambda x: (_log_end(x, TXN_TOPIC), _log_end(x, "t"),
                                        _log_end(x, GROUPS_TOPIC)))

        b.run_on_loop(lambda x: x.cluster._step_out("ZooKeeper session expired (test)"))

        assert b.run_on_loop(lambda x: dict(coord.partitions)) == {}
        assert b.run_on_loop(lambda x: dict(x.groups.coordinator.groups)) == {}
        b.clock.advance(3 * SHORT_MS / 1000)      # past "short"'s timeout: the job runs
        assert _run(b, lambda x: coord.abort_timed_out()) == 0
        # a write already under way from the old state (the job had listed it, then the
        # step out came): refused, nothing appended
        md = stale_part.txns["short"]
        fence = b.run_on_loop(lambda x: md.prepare_fence_epoch(b.clock.time_ms()))
        assert _run(b, lambda x: coord._write(0, stale_part, md, fence)) == \
            ErrorCode.NOT_COORDINATOR
        assert b.run_on_loop(lambda x: (_log_end(x, TXN_TOPIC), _log_end(x, "t"),
                                        _log_end(x, GROUPS_TOPIC))) == ends

        # back: registered under the same session, restated as the leader it was
        b.run_on_loop(lambda x: x.cluster.maybe_accept_clients())
        _wait(b, lambda x: 0 in coord.partitions and not coord.partitions[0].loading,
              "the transactions loaded again")
        live = b.run_on_loop(lambda x: coord.partitions[0].txns["live"])
        assert live.state.name == "ONGOING" and live.producer_epoch == 0
        # the stale write from before the step out is refused against the new loading too
        before = b.run_on_loop(lambda x: _log_end(x, TXN_TOPIC))
        assert _run(b, lambda x: coord._write(0, stale_part, md, fence)) == \
            ErrorCode.NOT_COORDINATOR
        assert b.run_on_loop(lambda x: _log_end(x, TXN_TOPIC)) == before
        producers["live"].commit_transaction(WAIT_S)     # not fenced
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g",
                      "enable.auto.commit": False})
        [tp] = c.committed([TopicPartition("t", 0)], timeout=WAIT_S)
        c.close()
        assert tp.offset == 3
    finally:
        b.stop()
