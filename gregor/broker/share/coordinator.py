"""The share coordinator of a cluster (KIP-932): the leader of a `__share_group_state`
partition keeps the durable state of the share-partitions whose key (group, topic id,
partition) hashes to it, serves ReadShareGroupState and WriteShareGroupState for them, and is
the only broker that writes them.

It loads its partition when it becomes the leader (replaying the compacted topic: the last
snapshot per key) and drops it when it stops leading. A write is appended as a whole snapshot
and answered once committed (as acks=all); only then is it what a read returns. Each key
remembers the highest share-partition leader epoch that read or wrote it: a write or read
from an older leader (one that lost its partition meanwhile) is FENCED_LEADER_EPOCH, so a
deposed leader can't overwrite what its successor loaded.
"""
from __future__ import annotations

import logging
from typing import Callable

from ...protocol.errors import ErrorCode
from . import state_records as S

log = logging.getLogger("gregor.broker.share.coordinator")
E = ErrorCode


class ShareCoordinator:
    def __init__(self, store):
        self.store = store                       # the CoordinatorLog of __share_group_state
        self.states: dict[tuple, dict] = {}      # key -> {state_epoch, start_offset, ...}

    def partition_of(self, key: tuple) -> int:
        return S.partition_for(*key, self.store.num_partitions)

    def coordinates(self, key: tuple) -> bool:
        return self.store.ownership(self.partition_of(key)) is not None

    # -- leadership of __share_group_state ---------------------------------------------------

    def became_leader(self, partition: int, leader_epoch: int) -> None:
        self._drop(partition)
        self.store.own(partition, leader_epoch)
        n = 0
        for key, value in self.store.records(partition):
            k = S.decode_key(key)
            if k is None:
                continue
            v = S.decode_value(value)
            if v is None:
                self.states.pop(k, None)
            else:
                self.states[k] = v
                n += 1
        log.info("coordinating the share state of %s-%d (epoch %d): %d record(s) read",
                 S.TOPIC, partition, leader_epoch, n)

    def stopped_leading(self, partition: int) -> None:
        self.store.disown(partition)
        self._drop(partition)

    def _drop(self, partition: int) -> None:
        for k in [k for k in self.states if self.partition_of(k) == partition]:
            del self.states[k]

    # -- the APIs ----------------------------------------------------------------------------

    def _fenced(self, key: tuple, leader_epoch: int) -> bool:
        current = self.states.get(key)
        return current is not None and leader_epoch < current.get("leader_epoch", -1)

    def read(self, key: tuple, leader_epoch: int) -> tuple[int, dict | None]:
        """(error code, state or None when the share-partition has none yet)."""
        if not self.coordinates(key):
            return E.NOT_COORDINATOR, None
        if self._fenced(key, leader_epoch):
            return E.FENCED_LEADER_EPOCH, None
        state = self.states.get(key)
        if state is not None:
            state["leader_epoch"] = leader_epoch     # its successor has read it
        return E.NONE, state

    def write(self, key: tuple, state: dict, leader_epoch: int,
              done: Callable[[int], None]) -> None:
        """Append the snapshot; done(error code) once committed (or refused)."""
        if not self.coordinates(key):
            done(E.NOT_COORDINATOR)
            return
        if self._fenced(key, leader_epoch):
            done(E.FENCED_LEADER_EPOCH)
            return
        state = {**state, "leader_epoch": leader_epoch}
        record = (S.encode_key(*key), S.encode_value(
            state["state_epoch"], state["start_offset"], state["end_offset"],
            state["batches"], leader_epoch))

        def committed(code: int, _last: int) -> None:
            if not code and self.coordinates(key) and not self._fenced(key, leader_epoch):
                self.states[key] = state
            done(code)
        try:
            self.store.append_then(self.partition_of(key), [record], committed)
        except Exception as e:                   # not the leader any more, storage errors
            done(getattr(e, "code", E.UNKNOWN_SERVER_ERROR))
