"""Cluster mode: a share-partition leader learns that a share-partition's state was reset or
deleted by its group's coordinator (AlterShareGroupOffsets, DeleteShareGroupOffsets,
DeleteGroups, all done at the share coordinator while the group has no members).

Those raise the key's state epoch at the share coordinator. A member of the group opening a
share session here (ShareFetch epoch 0) has the leader read each share-partition it names
that holds no acquired records; a state epoch newer than the one held replaces the copy.
(A write carrying the old epoch is FENCED_STATE_EPOCH and drops the copy too, see
ShareService._written.) A share-partition with acquired records is left alone: its group is
not empty, so no reset can have happened.
"""
from __future__ import annotations

import asyncio

from .partition_state import ACQUIRED


def idle(service, key: tuple) -> bool:
    sp = service.partitions.get(key)
    return sp is not None and not sp.count(ACQUIRED)


async def refresh(service, keys) -> None:
    """keys: [(key, partition)] this broker leads; each idle one is checked."""
    await asyncio.gather(*(_one(service, key, p) for key, p in keys if idle(service, key)),
                         return_exceptions=True)


async def _one(service, key: tuple, p) -> None:
    sp = service.partitions[key]
    epoch = p.leader_epoch
    code, state = await service.persister.read(key, epoch)
    if code or state is None or state["state_epoch"] <= sp.state_epoch:
        return
    if service.partitions.get(key) is not sp or not idle(service, key) or \
            not p.is_leader or p.leader_epoch != epoch:
        return                                   # changed while reading
    del service.partitions[key]
    service._saved[key] = state
    service.share_partition(key[0], key[1], key[2], p)
