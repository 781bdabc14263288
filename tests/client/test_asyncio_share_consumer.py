"""AsyncioShareConsumer against a broker: two members on one event loop split a partition
(implicit mode, close accepts the last poll), explicit RELEASE redelivers and REJECT
archives, acknowledgements are checked when they are made, commit_sync answers per partition,
the loop keeps running while a poll waits, and it shares a partition with confluent-kafka's
ShareConsumer."""
import asyncio
import time

import pytest

from gregor.client.consumer.asyncio_share import ACCEPT, REJECT, RELEASE, AsyncioShareConsumer
from gregor.testing import Broker

WAIT_S = 60          # liveness bound only


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


def topic(broker, name):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def produce(broker, name, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "batch.num.messages": 20})
    for i in range(n):
        p.produce(name, value=b"%d" % i, partition=0)
    assert p.flush(30) == 0


def share_partition(broker, group):
    return [v for k, v in broker.broker.share.partitions.items() if k[0] == group]


async def ready(broker, group, consumers):
    """Poll until the group's share-partition has started (records from now on arrive)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for c in consumers:
            assert await c.poll(0.1) == []
        if share_partition(broker, group):
            return
    raise AssertionError("never started")


async def drain(consumers, want, on_record=None):
    seen = {}
    deadline = time.monotonic() + WAIT_S
    while sum(len(v) for v in seen.values()) < want and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for r in await c.poll(0.1):
                seen.setdefault(r.offset, []).append((i, r.delivery_count))
                if on_record:
                    on_record(c, r)
    return seen


def test_two_members_split_a_partition_implicitly(broker):
    name = topic(broker, "asc-split")

    async def main():
        cs = [AsyncioShareConsumer("asc-split", broker.bootstrap_servers, max_poll_records=20)
              for _ in range(2)]
        try:
            for c in cs:
                await c.subscribe([name])
            assert cs[0].subscription() == [name]
            await ready(broker, "asc-split", cs)
            produce(broker, name, 200)
            return await drain(cs, 200)
        finally:
            for c in cs:
                await c.close()

    seen = asyncio.run(main())
    assert sorted(seen) == list(range(200))
    assert all(len(v) == 1 for v in seen.values())
    assert {v[0][0] for v in seen.values()} == {0, 1}
    assert share_partition(broker, "asc-split")[0].start_offset == 200   # close accepted the rest


def test_explicit_release_reject_and_commit(broker):
    name = topic(broker, "asc-explicit")

    async def main():
        async with AsyncioShareConsumer("asc-explicit", broker.bootstrap_servers,
                                        acknowledgement_mode="explicit") as c:
            await c.subscribe([name])
            await ready(broker, "asc-explicit", [c])
            produce(broker, name, 10)

            def decide(consumer, r):
                if r.offset == 3 and r.delivery_count == 1:
                    consumer.acknowledge(r, RELEASE)
                elif r.offset == 4:
                    consumer.acknowledge(r, REJECT)
                else:
                    consumer.acknowledge(r, ACCEPT)
            seen = await drain([c], 11, decide)
            with pytest.raises(RuntimeError, match="not in flight"):
                c.acknowledge_offset(name, 0, 3, ACCEPT)        # already acknowledged
            with pytest.raises(ValueError):
                c.acknowledge_offset(name, 0, 3, 7)
            results = await c.commit_sync()
            return seen, results

    seen, results = asyncio.run(main())
    assert [d for _i, d in seen[3]] == [1, 2] and len(seen[4]) == 1
    assert sorted(seen) == list(range(10))
    assert results and all(v is None for v in results.values())
    sp = share_partition(broker, "asc-explicit")[0]
    assert sp.start_offset == 10           # every record finished: accepted or archived


def test_explicit_mode_refuses_a_poll_with_records_unacknowledged(broker):
    name = topic(broker, "asc-strict")

    async def main():
        c = AsyncioShareConsumer("asc-strict", broker.bootstrap_servers,
                                 acknowledgement_mode="explicit")
        try:
            await c.subscribe([name])
            await ready(broker, "asc-strict", [c])
            produce(broker, name, 3)
            got, deadline = [], time.monotonic() + WAIT_S
            while not got and time.monotonic() < deadline:
                got = await c.poll(0.2)
            assert got
            with pytest.raises(RuntimeError, match="acknowledge every record"):
                await c.poll(0.1)
            async with AsyncioShareConsumer("asc-other", broker.bootstrap_servers) as implicit:
                with pytest.raises(RuntimeError, match="implicit"):
                    implicit.acknowledge(got[0])
            for r in got:
                c.acknowledge(r, RELEASE)
            again = []                    # released: delivered again, count 2
            while len(again) < len(got) and time.monotonic() < deadline:
                for r in await c.poll(0.2):
                    again.append(r)
                    c.acknowledge(r, ACCEPT)
            return got, again
        finally:
            await c.close()

    got, again = asyncio.run(main())
    assert [r.offset for r in again] == [r.offset for r in got]
    assert {r.delivery_count for r in again} == {2}


def test_the_loop_runs_while_a_poll_waits(broker):
    name = topic(broker, "asc-loop")

    async def main():
        async with AsyncioShareConsumer("asc-loop", broker.bootstrap_servers) as c:
            await c.subscribe([name])
            await ready(broker, "asc-loop", [c])
            ticks = 0

            async def tick():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1
            ticker = asyncio.create_task(tick())
            got = await c.poll(1.0)            # nothing to read: waits the whole second
            ticker.cancel()
            return got, ticks

    got, ticks = asyncio.run(main())
    assert got == [] and ticks > 0


def test_shares_a_partition_with_confluent_kafkas_share_consumer(broker):
    from confluent_kafka import ShareConsumer as CkShareConsumer
    name = topic(broker, "asc-mixed")

    async def main():
        theirs = CkShareConsumer({"bootstrap.servers": broker.bootstrap_servers,
                                  "group.id": "asc-mixed"})
        ours = AsyncioShareConsumer("asc-mixed", broker.bootstrap_servers, max_poll_records=20)
        try:
            await ours.subscribe([name])
            theirs.subscribe([name])
            await ready(broker, "asc-mixed", [ours])
            produce(broker, name, 300)
            seen = {}
            deadline = time.monotonic() + WAIT_S
            while len(seen) < 300 and time.monotonic() < deadline:
                for r in await ours.poll(0.1):
                    seen.setdefault(r.offset, []).append("gregor")
                    await asyncio.sleep(0.002)
                for m in theirs.poll(0.1):
                    if not m.error():
                        seen.setdefault(m.offset(), []).append("librdkafka")
                        time.sleep(0.002)
            return seen
        finally:
            await ours.close()
            theirs.close()

    seen = asyncio.run(main())
    assert sorted(seen) == list(range(300))
    assert all(len(v) == 1 for v in seen.values())
    assert {v[0] for v in seen.values()} == {"gregor", "librdkafka"}
