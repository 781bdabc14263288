"""Applying the acknowledgements of a ShareFetch or ShareAcknowledge, and waiting for their
write to `__share_group_state` before answering (what Kafka's partition leader does with
WriteShareGroupState): an acknowledgement answered without error is durable.

Each partition's batches are applied in order; a batch that names a record this member does
not hold (another member's, an expired lock, a finished record) changes nothing and gives the
partition Kafka's INVALID_RECORD_STATE.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from ...protocol.errors import ErrorCode
from ..security.checks import READ, TOPIC, allowed
from .partition_state import AckError

E = ErrorCode


def resolve(service, broker, ctx, topic_id: bytes, partition: int):
    """(partition object, topic name, 0) or (None, name, error code) for one share-partition
    named by a request."""
    name = service.topic_name(topic_id)
    if name is None:
        return None, None, E.UNKNOWN_TOPIC_ID
    if not allowed(broker, ctx, READ, TOPIC, name):
        return None, name, E.TOPIC_AUTHORIZATION_FAILED
    p = broker.replica_manager.get(name, partition)
    if p is None:
        return None, name, E.UNKNOWN_TOPIC_OR_PARTITION
    if not p.is_leader:
        return None, name, E.NOT_LEADER_OR_FOLLOWER
    return p, name, E.NONE


def apply(service, broker, ctx, group_id: str, member_id: str, topics: list,
          allow_renew: bool, cfg: dict | None = None) -> tuple[dict, set]:
    """({(topic id, partition): (code, message)}, {changed share-partition keys}). cfg: the
    group's settings when the caller has them already."""
    results: dict = {}
    dirty: set = set()
    now = service.now_ms()
    lock_ms = (cfg or service.settings(group_id))["record_lock_duration_ms"]
    for t in topics:
        tid = bytes(t["topic_id"])
        for part in t["partitions"]:
            batches = part.get("acknowledgement_batches") or []
            if not batches:
                continue
            pidx = part["partition_index"]
            p, _name, code = resolve(service, broker, ctx, tid, pidx)
            if code:
                results[(tid, pidx)] = (code, None)
                continue
            key = (group_id, tid, pidx)
            if service.needs_loading(key, p):      # cluster: its state could not be read
                results[(tid, pidx)] = (service.load_errors.get(
                    key, E.COORDINATOR_NOT_AVAILABLE), "the share-partition state is not "
                    "loaded from its share coordinator yet")
                continue
            sp = service.share_partition(group_id, tid, pidx, p)
            result = (E.NONE, None)
            for b in batches:
                try:
                    sp.acknowledge(member_id, b["first_offset"], b["last_offset"],
                                   list(b["acknowledge_types"]), now, lock_ms, allow_renew)
                    dirty.add(key)
                except AckError as e:
                    result = (e.code, e.message)
            results[(tid, pidx)] = result
    for key in dirty:
        service.wake(key)
        service.arm_lock_timer(key, service.partitions[key])
    return results, dirty


def persist_then(service, dirty: set, results: dict, then: Callable[[dict], None]) -> None:
    """Write every changed share-partition; then(results) once all writes are committed, a
    failed write turning that partition's result into its error."""
    if not dirty:
        then(results)
        return
    left = [len(dirty)]

    def one(key, code: int) -> None:
        if code:
            results[(key[1], key[2])] = (code, "the share-partition state was not written")
        left[0] -= 1
        if left[0] == 0:
            then(results)
    for key in dirty:
        service.persist(key, service.partitions[key], lambda code, k=key: one(k, code))


def when_persisted(service, dirty: set, results: dict, build: Callable[[dict], dict]):
    """build(results) once every write is committed: the response itself when they all
    committed at once (one node, where the append moves the high watermark), else a future
    of it. No task and no loop round trip for a ShareFetch on the fast path."""
    done: list = []
    fut = None

    def then(final: dict) -> None:
        if fut is None:
            done.append(final)
        elif not fut.done():
            try:
                fut.set_result(build(final))
            except Exception as e:                   # an encoding bug: the caller closes
                fut.set_exception(e)
    persist_then(service, dirty, results, then)
    if done:
        return build(done[0])
    fut = asyncio.get_running_loop().create_future()
    return fut
