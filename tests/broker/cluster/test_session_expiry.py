"""A broker whose ZooKeeper session expired comes back into service (issue 21).

Three brokers (zookeeper.session.timeout.ms=3000, replica.lag.time.max.ms=4000), a topic with
3 partitions, RF 3, min.insync.replicas 2, an idempotent acks=all confluent-kafka producer
running; a broker is frozen (SIGSTOP) until ZooKeeper has expired its session and the
controller has acted on it, then resumed (SIGCONT). It steps out, registers again under a new
session, is told the cluster by the controller and serves again. The check that matters, after
every fault: every broker answers a real client's Metadata (tests/support/availability.py)
naming every broker and a leader per partition, and every ISR is full again (how long that
took after SIGCONT is printed, not asserted: the waits are generous multiples of the session
and replica lag timeouts, so a loaded machine does not fail a correct broker); the resumed
broker steps out no more once a session timeout has passed since (a deadline armed while the
session was suspended used to take it out of service again then); and the checker finds
nothing acknowledged lost, duplicated or reordered.

One cluster is shared by the module's scenarios (each has its own topic, producer and
checker, and starts by waiting for the cluster to be whole), except the controller-blind
bounce, which needs a controller with a longer session.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import pytest

from tests.broker.cluster.test_replication import (CheckedProducer, consume_all, leader_of,
                                                   state)
from tests.support.availability import wait_available
from tests.support.checker import ReplicationChecker
from tests.support.cluster import BrokerCluster

pytestmark = pytest.mark.timeout(1800)

SESSION_MS = 3000
LAG_MS = 4000
# Liveness waits, derived from the configured timeouts and generous: a correct broker needs
# about one lag timeout on a quiet machine; at load average 22 rejoining the ISRs took 45 s,
# and ten of both (70 s) was not enough at load 31.
LIVENESS_S = 20 * (SESSION_MS + LAG_MS) / 1000
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    c = BrokerCluster(tmp_path_factory.mktemp("expiry"),
                      f"{zookeeper_server.hosts}/e-{uuid.uuid4().hex[:12]}", size=3,
                      session_ms=SESSION_MS, settings={"replica.lag.time.max.ms": LAG_MS})
    try:
        c.start()
        c.wait_for(lambda: len(c.registered()) == 3 and c.controller_id() != -1,
                   what="3 registered brokers and a controller")
        yield c
    finally:
        for b in c.brokers:                  # never leave a frozen process behind
            if b.running:
                os.kill(b.pid, signal.SIGCONT)
        c.stop()


class Load:
    """A steady idempotent acks=all producer (about 2000 records/s) in a thread."""

    def __init__(self, c: BrokerCluster, topic: str):
        self.c, self.topic = c, topic
        self.checker = ReplicationChecker()
        self.producer = CheckedProducer(c.bootstrap, topic, self.checker)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.producer.send(20)
            time.sleep(0.01)

    def progress(self, n: int = 500) -> None:
        at = len(self.checker.acked)
        self.c.wait_for(lambda: len(self.checker.acked) >= at + n, timeout=LIVENESS_S,
                        what=f"{n} more acknowledged records")

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.producer.flush()
        assert not self.producer.errors, self.producer.errors[:3]
        consume_all(self.c.bootstrap, self.topic, PARTITIONS, self.checker)
        assert self.checker.problems() == [], self.checker.summary()
        assert self.checker.acked


def new_topic(c: BrokerCluster, assignment: list[list[int]] | None = None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic
    name = f"s-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    topic = NewTopic(name, len(assignment), replica_assignment=assignment,
                     config={"min.insync.replicas": "2"}) \
        if assignment else NewTopic(name, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    for f in admin.create_topics([topic], operation_timeout=LIVENESS_S).values():
        f.result(LIVENESS_S)
    wait_available(c, name, PARTITIONS, within=LIVENESS_S)
    return name


def epoch_of(c: BrokerCluster, broker_id: int) -> int:
    """The broker epoch: the czxid of its registration."""
    stat = c.zk.exists(f"/brokers/ids/{broker_id}")
    return -1 if stat is None else stat.czxid


def pause_past_session(c: BrokerCluster, topic: str, victims: list[int]) -> float:
    """Freeze the victims until ZooKeeper expired their sessions and the cluster acted on it
    (no partition led by a victim, a controller that is not one), then resume them; returns
    time.monotonic() at SIGCONT."""
    epochs = {v: epoch_of(c, v) for v in victims}
    for v in victims:
        os.kill(c.by_id(v).pid, signal.SIGSTOP)
    try:
        c.wait_for(lambda: not set(victims) & set(c.registered()), timeout=LIVENESS_S,
                   what=f"the sessions of {victims} expired")
        c.wait_for(lambda: c.controller_id() not in victims + [-1] and all(
            leader_of(c, topic, p) not in victims for p in range(PARTITIONS)),
            timeout=LIVENESS_S,
            what="a controller and leaders among the others")
    finally:
        for v in victims:
            os.kill(c.by_id(v).pid, signal.SIGCONT)
    resumed = time.monotonic()
    c.wait_for(lambda: all(epoch_of(c, v) > epochs[v] for v in victims),
               timeout=LIVENESS_S,
               what=f"{victims} registered again under new sessions")
    return resumed


def step_outs(c: BrokerCluster) -> dict[int, int]:
    """How many times each broker has stepped out of the cluster (its log says so)."""
    return {b.broker_id: b.log_text().count("out of service (no longer leading")
            for b in c.brokers if b.running}


def assert_back(c: BrokerCluster, topic: str, resumed: float) -> dict:
    """Every broker serving with full ISRs, and none stepping out again once a whole
    session timeout has passed since SIGCONT."""
    timings = wait_available(c, topic, PARTITIONS, LIVENESS_S, since=resumed)
    before = step_outs(c)
    time.sleep(max(0.0, resumed + SESSION_MS / 1000 + 1 - time.monotonic()))
    assert step_outs(c) == before, "a resumed broker stepped out again a session later"
    wait_available(c, topic, PARTITIONS, within=LIVENESS_S)
    return timings


def scenario(c: BrokerCluster, pick, rounds: int = 1, assignment=None) -> list[dict]:
    topic = new_topic(c, assignment(c) if assignment else None)
    load = Load(c, topic)
    out = []
    try:
        load.progress()
        for r in range(rounds):
            victims = pick(c, topic, r)
            resumed = pause_past_session(c, topic, victims)
            timings = assert_back(c, topic, resumed)
            print(f"round {r}: {victims} paused past the session; serving after "
                  f"{timings['serving']:.2f}s, ISRs full after {timings['whole']:.2f}s")
            out.append(timings)
            load.progress()
        load.finish()
    finally:
        load.stop.set()
    return out


def test_a_leader_paused_past_its_session(cluster):
    def pick(c, topic, r):
        leaders = [leader_of(c, topic, p) for p in range(PARTITIONS)]
        ctrl = c.controller_id()
        return [next((b for b in leaders if b != ctrl), leaders[0])]
    scenario(cluster, pick)


def test_the_controller_paused_past_its_session(cluster):
    scenario(cluster, lambda c, topic, r: [c.controller_id()])


def test_a_follower_paused_past_its_session(cluster):
    """The follower leads nothing and is not the controller: it leaves every ISR, and comes
    back to followers' duties and clients."""
    def assignment(c):
        ctrl = c.controller_id()
        follower = next(b for b in (0, 1, 2) if b != ctrl)
        a, b = [x for x in (0, 1, 2) if x != follower]
        assignment.follower = follower
        return [[a, b, follower], [b, a, follower], [a, b, follower]]
    scenario(cluster, lambda c, topic, r: [assignment.follower], assignment=assignment)


def test_pause_rounds_in_a_row(cluster):
    """The leader of a partition paused past its session, three rounds in a row (the longer
    run: benchmarks/bench_cluster.py --pause-rounds 20)."""
    scenario(cluster, lambda c, topic, r: [leader_of(c, topic, r % PARTITIONS)], rounds=3)


def test_two_brokers_paused_past_their_sessions_at_once(cluster):
    """The controller and another broker: the third alone carries the cluster (ISRs of one,
    acks=all refused below min.insync.replicas and retried) until both are back."""
    def pick(c, topic, r):
        ctrl = c.controller_id()
        return [ctrl, next(b for b in (0, 1, 2) if b != ctrl)]
    scenario(cluster, pick)


def test_a_bounce_the_controller_did_not_see_is_a_failure_then_a_startup(
        zookeeper_server, tmp_path):
    """The controller is frozen (within its own, longer session) while a leader's session
    expires and the leader registers again: when the controller wakes up the set of ids under
    /brokers/ids is unchanged, only the leader's broker epoch (the czxid) is newer. As Kafka's
    controller (KAFKA-7235), it handles the broker as failed then started: its leaderships
    move to another in-sync replica, it is told the whole cluster under its new epoch, and it
    serves again as a follower that rejoins the ISRs."""
    c = BrokerCluster(tmp_path, f"{zookeeper_server.hosts}/b-{uuid.uuid4().hex[:12]}", size=3,
                      session_ms=SESSION_MS, settings={"replica.lag.time.max.ms": LAG_MS})
    c.brokers[0].settings["zookeeper.session.timeout.ms"] = 12000
    try:
        c.start()          # broker 0 starts (and is elected) first, the others join it
        c.wait_for(lambda: len(c.registered()) == 3, what="3 registered brokers")
        assert c.controller_id() == 0
        topic = new_topic(c, [[1, 2, 0], [2, 1, 0], [1, 0, 2]])
        load = Load(c, topic)
        try:
            load.progress()
            victim = 1
            before = state(c, topic, 0)
            assert before["leader"] == victim
            epoch = epoch_of(c, victim)
            os.kill(c.by_id(victim).pid, signal.SIGSTOP)
            os.kill(c.by_id(0).pid, signal.SIGSTOP)
            try:
                c.wait_for(lambda: victim not in c.registered(), timeout=LIVENESS_S,
                           what="the victim's session expired")
                os.kill(c.by_id(victim).pid, signal.SIGCONT)
                c.wait_for(lambda: epoch_of(c, victim) > epoch, timeout=LIVENESS_S,
                           what="the victim registered again")
                assert state(c, topic, 0) == before        # nobody acted meanwhile
            finally:
                os.kill(c.by_id(victim).pid, signal.SIGCONT)
                os.kill(c.by_id(0).pid, signal.SIGCONT)
            resumed = time.monotonic()
            timings = assert_back(c, topic, resumed)
            print(f"controller-blind bounce: serving after {timings['serving']:.2f}s, ISRs "
                  f"full after {timings['whole']:.2f}s")
            after = state(c, topic, 0)
            assert after["leader"] == 2 and after["leader_epoch"] > before["leader_epoch"]
            assert c.controller_id() == 0                  # its session survived
            assert "handled as a failure followed by a startup" in c.by_id(0).log_text()
            load.progress()
            load.finish()
        finally:
            load.stop.set()
    finally:
        for b in c.brokers:
            if b.running:
                os.kill(b.pid, signal.SIGCONT)
        c.stop()
