"""The metadata store against a real ZooKeeper: chroot creation, controller election with the
epoch bump, fencing of a stale controller's writes, producer-id blocks."""
from __future__ import annotations

import asyncio

import pytest

from gregor.broker.cluster import znodes as z
from gregor.broker.cluster.metadata_store import (BrokerIdInUse, Conflict, ControllerMoved,
                                                  MetadataStore, split_connect)


def test_split_connect():
    assert split_connect("a:1,b:2/x/y") == ("a:1,b:2", "/x/y")
    assert split_connect("a:1") == ("a:1", "")
    assert split_connect("a:1/") == ("a:1", "")
    with pytest.raises(ValueError):
        split_connect("/chroot")


def run(coro):
    return asyncio.run(coro)


async def _stores(connect, n):
    stores = [MetadataStore(connect, session_timeout_ms=4000) for _ in range(n)]
    for s in stores:
        await s.start()
    return stores


async def _close(stores):
    for s in stores:
        await s.close()


def test_chroot_layout_and_registration(zk_connect):
    async def main():
        a, b = await _stores(zk_connect, 2)
        try:
            for path in ("/brokers/ids", "/brokers/topics", "/config/topics",
                         "/admin/delete_topics", "/latest_producer_id_block"):
                assert await a._wait(a.client.exists_async(path)) is not None
            assert await a.cluster_id("first") == "first"
            assert await b.cluster_id("second") == "first"
            await a.register_broker(z.BrokerInfo(1, "h", 1))
            await a.register_broker(z.BrokerInfo(1, "h", 2))     # own session: updated
            with pytest.raises(BrokerIdInUse, match="broker.id 1 is already registered"):
                await b.register_broker(z.BrokerInfo(1, "h", 3))
            snap = await b.snapshot()
            assert snap.brokers[1].port == 2
        finally:
            await _close([a, b])
    run(main())


def test_one_controller_epoch_bumps_and_stale_writes_are_fenced(zk_connect):
    async def main():
        a, b, c = await _stores(zk_connect, 3)
        try:
            won = await asyncio.gather(*(s.try_become_controller(i, 0)
                                         for i, s in enumerate((a, b, c))))
            winners = [w for w in won if w is not None]
            assert len(winners) == 1 and winners[0][0] == 1
            first = (a, b, c)[won.index(winners[0])]
            others = [s for s in (a, b, c) if s is not first]
            epoch_version = winners[0][1]
            snap = await others[0].snapshot()
            assert snap.controller_epoch == 1
            state = z.PartitionState(0, 0, [0], 1)
            await first.create_topic("t", z.TopicAssignment({0: [0]}, "id"), {0: state}, {},
                                     epoch_version)
            await first.close()                      # its /controller goes with the session
            again = None
            for s in others:
                again = again or await s.try_become_controller(9, 0)
            assert again is not None and again[0] == 2
            # The old controller's fencing version is stale now.
            snap = await others[0].snapshot()
            st = snap.topics["t"].states[0]
            st2 = z.PartitionState(-1, 1, [0], 1, zk_version=st.zk_version)
            with pytest.raises(ControllerMoved):
                await others[0].update_states([("t", 0, st2)], epoch_version)
            await others[0].update_states([("t", 0, st2)], again[1])
            st3 = z.PartitionState(0, 2, [0], 2, zk_version=st.zk_version)   # stale state
            with pytest.raises(Conflict):
                await others[0].update_states([("t", 0, st3)], again[1])
        finally:
            await _close([a, b, c])
    run(main())


def test_producer_id_blocks_do_not_overlap(zk_connect):
    async def main():
        a, b = await _stores(zk_connect, 2)
        try:
            blocks = await asyncio.gather(*(s.allocate_producer_ids(i, 1000)
                                            for i in range(5) for s in (a, b)))
            starts = sorted(x.first for x in blocks)
            assert starts == list(range(0, 10000, 1000))
            assert all(x.last == x.first + 999 for x in blocks)
        finally:
            await _close([a, b])
    run(main())
