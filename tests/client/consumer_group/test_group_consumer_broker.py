"""gregor's Consumer in group mode against a real gregor broker (gregor.testing's in-process
Broker, shared by the module): consume everything
once, split partitions between members, resume at committed offsets, rebalance when a member
leaves or stops polling, static membership, auto commit, the asyncio consumer and the CLI."""
from __future__ import annotations

import asyncio
import itertools
import logging
import time

import pytest

from gregor.client.admin import AdminClient, NewTopic
from gregor.client.consumer import AsyncioConsumer, Consumer
from gregor.client.producer import Producer
from gregor.testing import Broker

PARTITIONS = 4
SESSION_MS = 10000
_seq = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with Broker({"group.initial.rebalance.delay.ms": 0,
                 "group.min.session.timeout.ms": 1000}) as b:
        yield b


def new_topic(broker, n: int, partitions: int = PARTITIONS) -> str:
    name = f"gc-{next(_seq)}-{time.monotonic_ns() % 10 ** 6}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(n):
        p.send(name, value=b"v%d" % i, key=b"%d" % i, partition=i % partitions)
    p.flush(30)
    p.close()
    return name


def consumer(broker, group, **extra):
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 300,
            "fetch.max.wait.ms": 100}
    conf.update(extra)
    return Consumer(conf)


def poll_until(consumers, want, timeout=60.0, seen=None, until=None):
    """{(partition, offset): [member index]} once `want` records were seen (and until())."""
    seen = {} if seen is None else seen
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(len(v) for v in seen.values()) >= want and (until is None or until()):
            break
        for i, c in enumerate(consumers):
            for r in c.poll(0.05):
                seen.setdefault((r.partition, r.offset), []).append(i)
    return seen


def wait_assigned(consumers, total=PARTITIONS, timeout=60.0, seen=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for r in c.poll(0.05):
                if seen is not None:
                    seen.setdefault((r.partition, r.offset), []).append(i)
        parts = [set(c.assignment()) for c in consumers]
        if sum(len(p) for p in parts) == total and all(parts):
            return parts
    raise AssertionError(f"no complete assignment: {[c.assignment() for c in consumers]}")


def test_subscribe_consumes_everything_once(broker):
    topic = new_topic(broker, 200)
    assigned, revoked = [], []
    c = consumer(broker, f"g-{topic}")
    c.subscribe([topic], on_assign=lambda cons, tps: assigned.append(tps),
                on_revoke=lambda cons, tps: revoked.append(tps))
    seen = poll_until([c], 200)
    assert len(seen) == 200 and all(len(v) == 1 for v in seen.values())
    assert sorted(assigned[0]) == [(topic, p) for p in range(PARTITIONS)]
    assert assigned[0][0].topic == topic
    c.close()
    assert revoked and sorted(revoked[-1]) == sorted(assigned[0])


def test_two_members_split_disjointly_and_completely(broker):
    topic = new_topic(broker, 400)
    a, b = consumer(broker, f"g-{topic}"), consumer(broker, f"g-{topic}")
    a.subscribe([topic])
    b.subscribe([topic])
    pa, pb = wait_assigned([a, b])
    assert not pa & pb and pa | pb == {(topic, p) for p in range(PARTITIONS)}
    # Once stable, everything once (the first member read some before sharing: at least
    # once, as Kafka's; so count from the start of each partition again).
    for c, parts in ((a, pa), (b, pb)):
        for t, p in parts:
            c.seek(t, p, 0)
    seen = poll_until([a, b], 400)
    assert len(seen) == 400 and all(len(v) == 1 for v in seen.values())
    a.close()
    b.close()


def test_commit_then_resume_exactly_at_committed(broker):
    topic = new_topic(broker, 100)
    group = f"g-{topic}"
    c = consumer(broker, group)
    c.subscribe([topic])
    seen = poll_until([c], 100)
    assert len(seen) == 100
    committed = c.commit()
    assert sum(committed.values()) == 100
    assert c.committed([(topic, p) for p in range(PARTITIONS)]) == committed
    c.close()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(8):
        p.send(topic, value=b"new%d" % i, partition=i % PARTITIONS)
    p.flush(30)
    p.close()
    c = consumer(broker, group)
    c.subscribe([topic])
    again = poll_until([c], 8, timeout=30)
    assert sorted(again) == sorted((i % PARTITIONS, 25 + i // PARTITIONS) for i in range(8))
    c.close()
    # explicit offsets, async, with on_commit called from a later poll()
    heard = []
    c = consumer(broker, group, on_commit=lambda err, offsets: heard.append((err, offsets)))
    c.subscribe([topic])
    while not c.assignment():                      # (a member commits once in the group)
        c.poll(0.05)
    fut = c.commit(offsets=[(topic, 0, 1)], asynchronous=True)
    assert fut.result(30) == {(topic, 0): 1}
    assert c.committed([(topic, 0)])[(topic, 0)] == 1
    c.poll(0.1)
    assert heard == [(None, {(topic, 0): 1})]
    c.close()


def test_member_closing_hands_everything_to_the_other(broker):
    topic = new_topic(broker, 0)
    a, b = consumer(broker, f"g-{topic}"), consumer(broker, f"g-{topic}")
    a.subscribe([topic])
    b.subscribe([topic])
    wait_assigned([a, b])
    a.close()
    deadline = time.monotonic() + 60
    while len(b.assignment()) < PARTITIONS and time.monotonic() < deadline:
        b.poll(0.1)
    assert len(b.assignment()) == PARTITIONS
    b.close()


def test_member_that_stops_polling_leaves_the_group(broker):
    topic = new_topic(broker, 0)
    lost = []
    a = consumer(broker, f"g-{topic}", **{"max.poll.interval.ms": 1500})
    b = consumer(broker, f"g-{topic}")
    a.subscribe([topic], on_lost=lambda cons, tps: lost.append(tps))
    b.subscribe([topic])
    wait_assigned([a, b])
    deadline = time.monotonic() + 60                # a stops polling
    while len(b.assignment()) < PARTITIONS and time.monotonic() < deadline:
        b.poll(0.1)
    assert len(b.assignment()) == PARTITIONS
    a.poll(0.1)                                     # a notices, loses its partitions, rejoins
    assert lost and a.assignment() == []
    wait_assigned([a, b])
    a.close()
    b.close()


def test_static_member_restarts_without_rebalance(broker):
    topic = new_topic(broker, 0)
    group = f"g-{topic}"
    a = consumer(broker, group, **{"group.instance.id": "a"})
    b = consumer(broker, group, **{"group.instance.id": "b"})
    a.subscribe([topic])
    b.subscribe([topic])
    pa, pb = wait_assigned([a, b])
    revoked = []
    b.subscribe([topic], on_revoke=lambda cons, tps: revoked.append(tps))
    a.close()                                       # static: no LeaveGroup
    a = consumer(broker, group, **{"group.instance.id": "a"})
    a.subscribe([topic])
    deadline = time.monotonic() + 30
    while set(a.assignment()) != pa and time.monotonic() < deadline:
        a.poll(0.1)
        b.poll(0.01)
    assert set(a.assignment()) == pa and set(b.assignment()) == pb
    assert not revoked
    a.close()
    b.close()


def test_auto_commit(broker):
    topic = new_topic(broker, 40)
    group = f"g-{topic}"
    c = consumer(broker, group, **{"enable.auto.commit": True, "auto.commit.interval.ms": 100})
    c.subscribe([topic])
    poll_until([c], 40)
    deadline = time.monotonic() + 30
    want = {(topic, p): 10 for p in range(PARTITIONS)}
    while c.committed(list(want)) != want and time.monotonic() < deadline:
        c.poll(0.2)
    assert c.committed(list(want)) == want
    c.close()


def test_pattern_subscription(broker):
    topic = new_topic(broker, 20)
    c = consumer(broker, f"g-{topic}")
    c.subscribe(["^" + topic.replace("-", "[-]") + "$"])
    assert len(poll_until([c], 20)) == 20
    c.close()


def test_poll_batches_in_group_mode(broker):
    topic = new_topic(broker, 100)
    c = consumer(broker, f"g-{topic}")
    c.subscribe([topic])
    n, deadline = 0, time.monotonic() + 60
    while n < 100 and time.monotonic() < deadline:
        n += sum(len(b) for b in c.poll_batches(0.1, arrow=True))
    assert n == 100
    c.close()


def test_asyncio_consumer_in_group_mode(broker):
    topic = new_topic(broker, 30)

    async def main():
        c = AsyncioConsumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                             "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100,
                             "session.timeout.ms": SESSION_MS})
        await c.subscribe([topic])
        got, deadline = 0, time.monotonic() + 60
        while got < 30 and time.monotonic() < deadline:
            got += len(await c.poll(0.1))
        committed = await c.commit()
        await c.close()
        return got, committed

    got, committed = asyncio.run(main())
    assert got == 30 and sum(committed.values()) == 30


def test_close_finishes_async_commits(broker):
    topic = new_topic(broker, 8)
    c = consumer(broker, f"g-{topic}")
    c.subscribe([topic])
    poll_until([c], 8)
    c.commit(asynchronous=True)
    c.close()                                       # before the answer: close waits for it
    c = consumer(broker, f"g-{topic}")
    assert c.committed([(topic, p) for p in range(PARTITIONS)]) == {
        (topic, p): 2 for p in range(PARTITIONS)}
    c.close()


def test_cooperative_sticky_revokes_only_what_moves(broker):
    topic = new_topic(broker, 0, partitions=6)
    group = f"g-{topic}"
    coop = {"partition.assignment.strategy": "cooperative-sticky"}
    revoked = {0: [], 1: [], 2: []}
    cs = []
    for i in range(3):
        cs.append(consumer(broker, group, **coop))
        for c in cs:
            c.poll(0.05)
        cs[i].subscribe([topic], on_revoke=lambda cons, tps, i=i: revoked[i].extend(tps))
        parts = wait_assigned(cs, total=6)
        assert set().union(*parts) == {(topic, p) for p in range(6)}
        assert sum(len(p) for p in parts) == 6
    assert [len(c.assignment()) for c in cs] == [2, 2, 2]
    # each newcomer took only what it needed: 3 moved to the second, 1+1 to the third
    assert len(revoked[0]) + len(revoked[1]) == 3 + 2 and not revoked[2]
    for c in cs:
        c.close()


def test_seek_inside_on_assign_picks_the_start(broker):
    topic = new_topic(broker, 40)
    c = consumer(broker, f"g-{topic}")

    def on_assign(cons, tps):
        cons.assign([(tp.topic, tp.partition, 8) for tp in tps])   # librdkafka's habit
    c.subscribe([topic], on_assign=on_assign)
    seen = poll_until([c], 8)
    assert sorted(seen) == sorted((p, o) for p in range(PARTITIONS) for o in (8, 9))
    with pytest.raises(Exception, match="subscribed"):
        c.assign([(topic, 0)])
    c.close()


def test_unsubscribe_hands_over_and_subscribe_again_rejoins(broker):
    topic = new_topic(broker, 0)
    a, b = consumer(broker, f"g-{topic}"), consumer(broker, f"g-{topic}")
    a.subscribe([topic])
    b.subscribe([topic])
    wait_assigned([a, b])
    a.unsubscribe()
    assert a.assignment() == []
    deadline = time.monotonic() + 60
    while len(b.assignment()) < PARTITIONS and time.monotonic() < deadline:
        b.poll(0.1)
    assert len(b.assignment()) == PARTITIONS
    a.subscribe([topic])
    wait_assigned([a, b])
    a.close()
    b.close()


def test_heartbeats_keep_a_busy_member_in_the_group(broker, caplog):
    """Processing longer than session.timeout.ms between polls is fine (the group thread
    heartbeats); only max.poll.interval.ms bounds it."""
    # a failure shows the coordinator's reason for any rebalance
    caplog.set_level(logging.INFO, logger="gregor.broker.group")
    topic = new_topic(broker, 0)
    # the broker runs in this process: a session of a few heartbeats' slack keeps a busy
    # machine's GIL hand-offs from passing for a missed heartbeat
    short = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 200}
    events = []
    a = consumer(broker, f"g-{topic}", **short)
    b = consumer(broker, f"g-{topic}", **short)
    a.subscribe([topic], on_revoke=lambda c, tps: events.append("a"),
                on_lost=lambda c, tps: events.append("a lost"))
    b.subscribe([topic])
    pa, pb = wait_assigned([a, b])
    # a may have been alone in a first generation and given everything back when b joined
    # (b joining late on a busy machine): only what happens from here on counts
    events.clear()
    b.subscribe([topic], on_revoke=lambda c, tps: events.append("b"))
    end = time.monotonic() + 7.0                    # a "works" for 7 s: no poll
    while time.monotonic() < end:
        b.poll(0.1)
    a.poll(0.1)
    assert set(a.assignment()) == pa and set(b.assignment()) == pb and not events
    a.close()
    b.close()


def test_a_raising_revoke_callback_does_not_stall_the_group(broker):
    topic = new_topic(broker, 0)

    def boom(cons, tps):
        raise RuntimeError("application bug")
    a, b = consumer(broker, f"g-{topic}"), consumer(broker, f"g-{topic}")
    a.subscribe([topic], on_revoke=boom)
    while not a.assignment():
        a.poll(0.05)
    b.subscribe([topic])
    raised, deadline = 0, time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            a.poll(0.05)
        except RuntimeError:
            raised += 1
        b.poll(0.05)
        if a.assignment() and b.assignment():
            break
    assert raised == 1 and len(a.assignment()) + len(b.assignment()) == PARTITIONS
    b.close()
    with pytest.raises(RuntimeError):
        a.close()                                   # the callback raises again; still closed
    assert a._closed
