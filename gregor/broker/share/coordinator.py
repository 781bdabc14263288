"""The share coordinator of a cluster (KIP-932): the leader of a `__share_group_state`
partition keeps the durable state of the share-partitions whose key (group, topic id,
partition) hashes to it, serves ReadShareGroupState / WriteShareGroupState (the share-partition
leaders) and InitializeShareGroupState / DeleteShareGroupState / ReadShareGroupStateSummary
(the group coordinator's admin APIs) for them, and is the only broker that writes them.

It loads its partition when it becomes the leader (replaying the compacted topic: the last
ShareSnapshot per key, with any ShareUpdate after it folded in; see state_records) and drops it
when it stops leading. A write is appended as a whole ShareSnapshot and answered once
committed (as acks=all); only then is it what a read returns. Each key remembers the
highest share-partition leader epoch that read or wrote it: a write or read from an older
leader (one that lost its partition meanwhile) is FENCED_LEADER_EPOCH, so a deposed leader
can't overwrite what its successor loaded. Each key also has a state epoch, raised by an
initialize (an offset reset) or a delete: a write carrying an older one is FENCED_STATE_EPOCH,
so a leader still holding the state from before the reset can't undo it. After a delete the
key keeps its state epoch in memory (the topic holds a tombstone).
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from ...protocol.errors import ErrorCode
from . import state_records as S

log = logging.getLogger("gregor.broker.share.coordinator")
E = ErrorCode


class ShareCoordinator:
    def __init__(self, store, now_ms: Callable[[], int] | None = None):
        self.store = store                       # the CoordinatorLog of __share_group_state
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.states: dict[tuple, dict] = {}      # key -> {state_epoch, start_offset, ...}
        self.deleted: dict[tuple, int] = {}      # key -> state epoch of its delete
        # key -> (snapshot epoch, state epoch, create ms) of the last snapshot appended
        self.snapshots: dict[tuple, tuple] = {}

    def partition_of(self, key: tuple) -> int:
        return S.partition_for(*key, self.store.num_partitions)

    def coordinates(self, key: tuple) -> bool:
        return self.store.ownership(self.partition_of(key)) is not None

    # -- leadership of __share_group_state ---------------------------------------------------

    def became_leader(self, partition: int, leader_epoch: int) -> None:
        self._drop(partition)
        self.store.own(partition, leader_epoch)
        loaded: dict[tuple, dict] = {}
        n = S.load(loaded, self.store.records(partition), f"{S.TOPIC}-{partition}")
        self.states.update(loaded)
        self.snapshots.update((k, S.snapshot_of(v)) for k, v in loaded.items())
        log.info("coordinating the share state of %s-%d (epoch %d): %d record(s) read",
                 S.TOPIC, partition, leader_epoch, n)

    def stopped_leading(self, partition: int) -> None:
        self.store.disown(partition)
        self._drop(partition)

    def _drop(self, partition: int) -> None:
        for k in [k for k in self.states if self.partition_of(k) == partition]:
            del self.states[k]
        for k in [k for k in self.deleted if self.partition_of(k) == partition]:
            del self.deleted[k]
        for k in [k for k in self.snapshots if self.partition_of(k) == partition]:
            del self.snapshots[k]

    # -- the APIs ----------------------------------------------------------------------------

    def _fenced(self, key: tuple, leader_epoch: int) -> bool:
        current = self.states.get(key)
        return current is not None and leader_epoch < current.get("leader_epoch", -1)

    def state_epoch(self, key: tuple) -> int:
        """The key's current state epoch (-1: never initialised, written or deleted here)."""
        current = self.states.get(key)
        return current["state_epoch"] if current is not None else self.deleted.get(key, -1)

    def read(self, key: tuple, leader_epoch: int) -> tuple[int, dict | None]:
        """(error code, state or None when the share-partition has none yet). A state whose
        start offset is -1 (initialised without one, or deleted) starts where the group's
        share.auto.offset.reset says, at its state epoch."""
        if not self.coordinates(key):
            return E.NOT_COORDINATOR, None
        if self._fenced(key, leader_epoch):
            return E.FENCED_LEADER_EPOCH, None
        state = self.states.get(key)
        if state is not None:
            state["leader_epoch"] = leader_epoch     # its successor has read it
        elif key in self.deleted:                    # no state, but the leader takes its epoch
            return E.NONE, {"state_epoch": self.deleted[key], "start_offset": -1,
                            "end_offset": -1, "batches": []}
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
        if state["state_epoch"] < self.state_epoch(key):
            done(E.FENCED_STATE_EPOCH)
            return
        state = {**state, "leader_epoch": leader_epoch}
        # not waiting for the fsync: see docs/share-groups.md, Durability
        self._append(key, state, lambda: not self._fenced(key, leader_epoch) and
                     state["state_epoch"] >= self.state_epoch(key), done, durable=False)

    def initialize(self, key: tuple, state_epoch: int, start_offset: int,
                   done: Callable[[int], None]) -> None:
        """InitializeShareGroupState: the key starts again at start_offset (-1: where its
        group's share.auto.offset.reset says, when a leader loads it) with nothing in flight,
        at a state epoch not older than its current one (FENCED_STATE_EPOCH otherwise). The
        highest leader epoch seen is kept, so deposed leaders stay fenced."""
        if not self.coordinates(key):
            done(E.NOT_COORDINATOR)
            return
        if state_epoch < self.state_epoch(key):
            done(E.FENCED_STATE_EPOCH)
            return
        current = self.states.get(key)
        state = {"state_epoch": state_epoch, "start_offset": start_offset,
                 "end_offset": start_offset, "batches": [],
                 "leader_epoch": current.get("leader_epoch", -1) if current else -1}
        self._append(key, state, lambda: state_epoch >= self.state_epoch(key), done)

    def delete(self, key: tuple, done: Callable[[int], None]) -> None:
        """DeleteShareGroupState: a tombstone for the key once committed. Its state epoch
        is kept (one higher) so a leader still holding the old state is fenced."""
        if not self.coordinates(key):
            done(E.NOT_COORDINATOR)
            return
        epoch = self.state_epoch(key) + 1

        def committed(code: int, _last: int) -> None:
            if not code and self.coordinates(key):
                self.states.pop(key, None)
                self.snapshots.pop(key, None)
                self.deleted[key] = max(epoch, self.deleted.get(key, -1))
            done(code)
        try:
            self.store.append_then(self.partition_of(key), [(S.encode_key(*key), None)],
                                   committed)
        except Exception as e:
            done(getattr(e, "code", E.UNKNOWN_SERVER_ERROR))

    def summary(self, key: tuple, leader_epoch: int = -1) -> tuple[int, int, int]:
        """ReadShareGroupStateSummary: (error code, state epoch, start offset; -1 when the
        key has no state). Read only: the leader epoch is checked, never raised (-1 from the
        group coordinator, which is no share-partition leader)."""
        if not self.coordinates(key):
            return E.NOT_COORDINATOR, -1, -1
        if leader_epoch >= 0 and self._fenced(key, leader_epoch):
            return E.FENCED_LEADER_EPOCH, -1, -1
        state = self.states.get(key)
        if state is None:
            return E.NONE, self.state_epoch(key), -1
        return E.NONE, state["state_epoch"], state["start_offset"]

    def _append(self, key: tuple, state: dict, still_newest: Callable[[], bool],
                done: Callable[[int], None], durable: bool = True) -> None:
        """Append the snapshot; it is what reads return once committed, if nothing newer
        was committed meanwhile."""
        now = self.now_ms()
        epoch, created = S.next_snapshot(self.snapshots.get(key), state["state_epoch"], now)
        self.snapshots[key] = (epoch, state["state_epoch"], created)
        record = (S.encode_key(*key), S.encode_snapshot(
            state["state_epoch"], state["start_offset"], state["batches"],
            state["leader_epoch"], snapshot_epoch=epoch, create_ms=created, write_ms=now))

        def committed(code: int, _last: int) -> None:
            if not code and self.coordinates(key) and still_newest():
                self.states[key] = state
                self.deleted.pop(key, None)
            done(code)
        try:
            self.store.append_then(self.partition_of(key), [record], committed,
                                   durable=durable)
        except Exception as e:                   # not the leader any more, storage errors
            done(getattr(e, "code", E.UNKNOWN_SERVER_ERROR))
