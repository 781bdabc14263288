"""The share-group offset admin APIs on a cluster, served by the group's coordinator: the
share-partitions' state lives with their share coordinators (other brokers, in general),
reached through share/state_admin.py, never the local store.

- DescribeShareGroupOffsets reads each share-partition's start offset with
  ReadShareGroupStateSummary. Without topics it asks for every partition of every topic and
  answers those that have state (the group coordinator keeps no list of them).
- AlterShareGroupOffsets reads each named share-partition's state epoch, then initializes it
  (InitializeShareGroupState) one epoch higher at the new start offset with nothing in
  flight; a share-partition leader still holding the old state is fenced by that epoch and
  reads the new state.
- DeleteShareGroupOffsets and DeleteGroups delete the share-partitions that have state
  (DeleteShareGroupState).
A group with members gets NON_EMPTY_GROUP for alter and delete, as in Kafka. A group is known
when its coordinator has it in memory or some share-partition has state for it.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from ...protocol.errors import ErrorCode
from ..metadata_common import INTERNAL
from . import state_admin

E = ErrorCode
log = logging.getLogger("gregor.broker.share.admin")


def _every_partition(service, group_id: str) -> list[tuple]:
    keys = []
    for name in service.metadata.names():
        if name in INTERNAL:
            continue
        meta = service.metadata.topic(name)
        if meta is not None:
            keys += [(group_id, meta[0], p) for p in range(meta[1])]
    return keys


def _forget_local(service, key: tuple) -> None:
    """This broker's copy of a share-partition is stale once its state is reset or deleted."""
    service.partitions.pop(key, None)
    service._saved.pop(key, None)


def coordinator_error(service, group_id: str) -> int:
    """NOT_COORDINATOR unless this broker is the group's coordinator (the leader of its
    `__consumer_offsets` partition), whose memory says whether the group has members."""
    groups = getattr(service.broker, "groups", None)
    coord = getattr(groups, "coordinator", None)
    return E.COORDINATOR_NOT_AVAILABLE if coord is None else coord.group_status(group_id)


def _not_empty(service, group_id: str) -> dict | None:
    code = coordinator_error(service, group_id)
    if code:
        return {"error_code": code, "error_message": None, "responses": []}
    group = service.membership.groups.get(group_id)
    if group is not None and group.members:
        return {"error_code": E.NON_EMPTY_GROUP,
                "error_message": f"Share group {group_id} has members; stop them first.",
                "responses": []}
    return None


def _not_found(group_id: str) -> dict:
    return {"error_code": E.GROUP_ID_NOT_FOUND,
            "error_message": f"Share group {group_id} not found.", "responses": []}


async def _summary(service, keys) -> dict:
    """{key: (error code, state epoch, start offset; -1: no state)}."""
    return await state_admin.summary(service.persister, keys) if keys else {}


# -- DescribeShareGroupOffsets ---------------------------------------------------------------

async def describe_offsets(service, group_id: str, topics, topic_allowed) -> dict:
    code = coordinator_error(service, group_id)
    if code:
        return {"group_id": group_id, "topics": [], "error_code": code, "error_message": None}
    got: dict = {}
    wanted: dict = {}
    if topics is None:
        keys = _every_partition(service, group_id)
        got = await _summary(service, keys)
        for key in keys:
            code, _epoch, start = got[key]
            name = service.topic_name(key[1])
            if name is not None and (code or start >= 0):    # state, or no answer about it
                wanted.setdefault(name, []).append(key[2])
    else:
        for t in topics:
            wanted.setdefault(t["topic_name"], []).extend(t["partitions"])
    out, asks = [], []
    for name, parts in wanted.items():
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        entries = []
        for p in sorted(set(parts)):
            code = E.NONE if topic_allowed(name) else E.TOPIC_AUTHORIZATION_FAILED
            if code == E.NONE and (meta is None or not 0 <= p < meta[1]):
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            entry = {"partition_index": p, "start_offset": -1, "leader_epoch": -1,
                     "error_code": code, "error_message": None}
            if code == E.NONE:
                asks.append(((group_id, tid, p), entry))
            entries.append(entry)
        out.append({"topic_name": name, "topic_id": tid, "partitions": entries})
    got.update(await _summary(service, [k for k, _e in asks if k not in got]))
    for key, entry in asks:
        code, _epoch, start = got[key]
        entry["error_code"] = code
        entry["start_offset"] = start if code == E.NONE else -1
    if group_id not in service.membership.groups and not any(
            c == E.NONE and s >= 0 for c, _e, s in got.values()):
        return _describe_not_found(group_id)
    return {"group_id": group_id, "topics": out, "error_code": E.NONE, "error_message": None}


def _describe_not_found(group_id: str) -> dict:
    return {"group_id": group_id, "topics": [], "error_code": E.GROUP_ID_NOT_FOUND,
            "error_message": f"Share group {group_id} not found."}


# -- AlterShareGroupOffsets ------------------------------------------------------------------

def alter_offsets(service, broker, group_id: str, topics, topic_allowed,
                  respond: Callable[[dict], None]) -> None:
    refused = _not_empty(service, group_id)
    if refused is not None:
        return respond(refused)
    out, wanted = [], {}
    for t in topics:
        name = t["topic_name"]
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        entries = []
        for part in t["partitions"]:
            p, offset = part["partition_index"], part["start_offset"]
            code, message = E.NONE, None
            if not topic_allowed(name):
                code = E.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= p < meta[1]:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                message = _outside_log(broker, name, p, offset)
                if message is not None:
                    code = E.INVALID_REQUEST
            entry = {"partition_index": p, "error_code": code, "error_message": message}
            if code == E.NONE:
                wanted[(group_id, tid, p)] = (offset, entry)
            entries.append(entry)
        out.append({"topic_name": name, "topic_id": tid, "partitions": entries})
    body = {"error_code": E.NONE, "error_message": None, "responses": out}
    if not wanted:
        return respond(body)

    async def run():
        epochs = await _summary(service, list(wanted))
        items = {}
        for key, (offset, entry) in wanted.items():
            code, epoch, _start = epochs[key]
            if code:
                entry["error_code"] = code
            else:
                items[key] = (max(epoch, 0) + 1, offset)
        codes = await state_admin.initialize(service.persister, items) if items else {}
        for key, code in codes.items():
            wanted[key][1]["error_code"] = code
            _forget_local(service, key)
        respond(body)
    _run(run(), lambda: respond({"error_code": E.UNKNOWN_SERVER_ERROR, "error_message": None,
                                 "responses": []}))


def _outside_log(broker, topic: str, p: int, offset: int) -> str | None:
    """The offset must lie in the log, checked where this broker leads the partition (the
    leader elsewhere holds the log's bounds)."""
    partition = broker.replica_manager.get(topic, p)
    if partition is None or not partition.is_leader:
        return None if offset >= 0 else f"offset {offset} is negative"
    lo, hi = partition.log.log_start_offset, partition.high_watermark
    return None if lo <= offset <= hi else f"offset {offset} is outside [{lo}, {hi}]"


# -- DeleteShareGroupOffsets / DeleteGroups --------------------------------------------------

async def _delete_with_state(service, keys) -> tuple[dict, set]:
    """Delete the keys that have state: ({key: error code} of the failures, the keys that
    had state)."""
    got = await _summary(service, keys)
    codes = {k: c for k, (c, _e, _s) in got.items() if c}
    had = {k for k, (c, _e, s) in got.items() if not c and s >= 0}
    if had:
        deleted = await state_admin.delete(service.persister, had)
        codes.update({k: c for k, c in deleted.items() if c})
    for k in had:
        _forget_local(service, k)
    return codes, had


def delete_offsets(service, group_id: str, topics, topic_allowed,
                   respond: Callable[[dict], None]) -> None:
    refused = _not_empty(service, group_id)
    if refused is not None:
        return respond(refused)
    out, keys = [], []
    for t in topics:
        name = t["topic_name"]
        meta = service.metadata.topic(name)
        tid = meta[0] if meta else bytes(16)
        code = E.NONE
        if not topic_allowed(name):
            code = E.TOPIC_AUTHORIZATION_FAILED
        elif meta is None:
            code = E.UNKNOWN_TOPIC_OR_PARTITION
        else:
            keys += [(group_id, tid, p) for p in range(meta[1])]
        out.append({"topic_name": name, "topic_id": tid, "error_code": code,
                    "error_message": None})
    body = {"error_code": E.NONE, "error_message": None, "responses": out}
    known = group_id in service.membership.groups
    service.membership.forget_topics(group_id, [t["topic_id"] for t in out
                                                if t["error_code"] == E.NONE])

    async def run():
        everything = keys if known else _every_partition(service, group_id)
        got = await _summary(service, everything)
        if not known and not any(c == E.NONE and s >= 0 for c, _e, s in got.values()):
            return respond(_not_found(group_id))
        codes, _had = await _delete_with_state(service, keys)
        for t in out:
            meta = service.metadata.topic(t["topic_name"])
            failed = [c for k, c in codes.items() if meta and k[1] == meta[0]]
            if t["error_code"] == E.NONE and failed:
                t["error_code"] = failed[0]
        respond(body)
    _run(run(), lambda: respond({"error_code": E.UNKNOWN_SERVER_ERROR, "error_message": None,
                                 "responses": []}))


def delete_groups(service, group_ids: list[str], respond: Callable[[dict], None]) -> None:
    results: dict = {}

    async def run():
        for gid in group_ids:
            code = coordinator_error(service, gid)
            if not code and gid in service.membership.groups:
                code = await _delete_membership(service, gid)
            results[gid] = code
            if code:
                continue
            codes, had = await _delete_with_state(service, _every_partition(service, gid))
            if codes:
                results[gid] = next(iter(codes.values()))
        respond(results)
    _run(run(), lambda: respond({g: results.get(g, E.UNKNOWN_SERVER_ERROR)
                                 for g in group_ids}))


async def _delete_membership(service, group_id: str) -> int:
    """The group out of the coordinator, its membership records' tombstones written."""
    fut = asyncio.get_running_loop().create_future()

    def done(code: int) -> None:
        if not fut.done():
            fut.set_result(code)
    code = service.membership.delete(group_id, done)
    return code if code else await fut


def _run(coro, on_error: Callable[[], None]) -> None:
    """Run coro; if it fails, answer with on_error() (the failure is logged)."""
    def finished(task):
        if not task.cancelled() and task.exception() is not None:
            log.warning("share-group admin request failed", exc_info=task.exception())
            on_error()
    asyncio.ensure_future(coro).add_done_callback(finished)
