"""What the share-group handlers share: the broker's share service, and whether a group id
already belongs to a classic or consumer group (a group id has one type, as in Kafka)."""
from __future__ import annotations

import asyncio
import inspect

from ...protocol.errors import ErrorCode

E = ErrorCode
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


def share_service(broker):
    return getattr(broker, "share", None)


def other_group_type(broker, group_id: str) -> str | None:
    """'classic' / 'consumer' when the group coordinator holds a live group of that id."""
    coord = getattr(broker, "groups", None)
    coord = getattr(coord, "coordinator", None)
    group = coord.groups.get(group_id) if coord is not None else None
    if group is None or getattr(group, "dead", False):
        return None
    return "consumer" if type(group).__name__ == "ConsumerGroup" else "classic"


def after_loading(broker, ctx, request, handle_now):
    """Cluster mode: handle_now() once the share-partitions the request names (and those of
    the member's share session) that this broker leads have their state read from their
    share coordinator (service.ensure_loaded), and, for a new share session, those whose state
    may have been reset meanwhile checked (share/epoch_refresh.py); at once when nothing needs
    reading."""
    from ..security.checks import GROUP, READ, allowed
    from ..share import epoch_refresh
    service = share_service(broker)
    group_id, member_id = request.get("group_id") or "", request.get("member_id") or ""
    if service is None or broker.cluster is None or not group_id or \
            not allowed(broker, ctx, READ, GROUP, group_id, log_denied=False):
        return handle_now()
    pairs = {(bytes(t["topic_id"]), p["partition_index"]) for t in request["topics"]
             for p in t["partitions"]}
    session = service.sessions.get(group_id, member_id)
    if session is not None:
        pairs |= set(session.partitions)
    keys, checks = [], []
    opening = request.get("share_session_epoch") == 0
    for tid, pidx in pairs:
        name = service.topic_name(tid)
        p = broker.replica_manager.get(name, pidx) if name is not None else None
        key = (group_id, tid, pidx)
        if p is not None and p.is_leader and service.needs_loading(key, p):
            keys.append((key, p))
        elif p is not None and p.is_leader and opening and epoch_refresh.idle(service, key):
            checks.append((key, p))          # reset or deleted meanwhile? (epoch_refresh.py)
    if not keys and not checks:
        return handle_now()

    async def run():
        await service.ensure_loaded(keys)
        await epoch_refresh.refresh(service, checks)
        result = handle_now()
        while inspect.isawaitable(result):
            result = await result
        return result
    return asyncio.ensure_future(run())
