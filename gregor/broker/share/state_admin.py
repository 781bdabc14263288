"""The group coordinator's side of the share-state persister in a cluster (KIP-932): what
DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups
need from the share coordinators of a group's share-partitions, whichever brokers those are.

Keys are grouped by their coordinator (the leader of the `__share_group_state` partition
each hashes to) into one ReadShareGroupStateSummary / InitializeShareGroupState /
DeleteShareGroupState per broker, sent on the persister's ordered connection to it (so they
stay behind the share-partition leaders' writes made before them); keys this broker
coordinates are served in-process. A coordinator that is unknown or unreachable answers
COORDINATOR_NOT_AVAILABLE for its keys.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from ...protocol import messages
from ...protocol.errors import ErrorCode

E = ErrorCode
SUMMARY = messages.api("ReadShareGroupStateSummary")
INITIALIZE = messages.api("InitializeShareGroupState")
DELETE = messages.api("DeleteShareGroupState")


async def summary(persister, keys) -> dict:
    """{key: (error code, state epoch, start offset; -1: no state)}."""
    def local(coordinator, key, _extra):
        return coordinator.summary(key, -1)

    def parse(p):
        return p["error_code"], p["state_epoch"], p["start_offset"]
    return await _each(persister, SUMMARY, {k: None for k in keys}, local,
                       lambda _k, _x: {"leader_epoch": -1}, parse, (E.COORDINATOR_NOT_AVAILABLE,
                                                                   -1, -1))


async def initialize(persister, items: dict) -> dict:
    """items {key: (state epoch, start offset)} -> {key: error code}."""
    async def local(coordinator, key, extra):
        return await _written(lambda done: coordinator.initialize(key, extra[0], extra[1], done))
    return await _each(persister, INITIALIZE, items, local,
                       lambda _k, x: {"state_epoch": x[0], "start_offset": x[1]},
                       lambda p: p["error_code"], E.COORDINATOR_NOT_AVAILABLE)


async def delete(persister, keys) -> dict:
    """{key: error code} once each key's tombstone is committed."""
    async def local(coordinator, key, _extra):
        return await _written(lambda done: coordinator.delete(key, done))
    return await _each(persister, DELETE, {k: None for k in keys}, local,
                       lambda _k, _x: {}, lambda p: p["error_code"], E.COORDINATOR_NOT_AVAILABLE)


async def _written(start: Callable) -> int:
    fut = asyncio.get_running_loop().create_future()
    start(lambda code: fut.done() or fut.set_result(code))
    return await fut


async def _each(persister, api, items: dict, local, fields, parse, unavailable) -> dict:
    me = persister.broker.cluster.broker_id
    out: dict = {}
    by_broker: dict[int, list] = {}
    for key in items:
        by_broker.setdefault(persister._leader(key), []).append(key)
    jobs = []
    for broker_id, keys in by_broker.items():
        if broker_id < 0:
            out.update({k: unavailable for k in keys})
        elif broker_id == me:
            for k in keys:
                r = local(persister.coordinator, k, items[k])
                out[k] = await r if asyncio.iscoroutine(r) else r
        else:
            jobs.append(_remote(persister, api, broker_id, keys, items, fields, parse,
                                unavailable, out))
    if jobs:
        await asyncio.gather(*jobs)
    return out


async def _remote(persister, api, broker_id, keys, items, fields, parse, unavailable, out):
    by_request: dict[tuple, list] = {}
    for k in keys:
        by_request.setdefault((k[0], k[1]), []).append(k)
    for group_id in sorted({k[0] for k in keys}):
        topics = [{"topic_id": tid, "partitions": [
            {"partition": k[2], **fields(k, items[k])} for k in ks]}
            for (g, tid), ks in by_request.items() if g == group_id]
        answer = await persister._request(broker_id, api, {"group_id": group_id,
                                                           "topics": topics})
        got = {}
        for t in (answer or {}).get("results") or ():
            for p in t["partitions"]:
                got[(group_id, bytes(t["topic_id"]), p["partition"])] = parse(p)
        for (g, _tid), ks in by_request.items():
            if g == group_id:
                for k in ks:
                    out[k] = got.get(k, unavailable if answer is None
                                     else _unknown(unavailable))


def _unknown(unavailable):
    return E.UNKNOWN_SERVER_ERROR if isinstance(unavailable, int) \
        else (E.UNKNOWN_SERVER_ERROR,) + tuple(unavailable[1:])
