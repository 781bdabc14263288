"""The share-partition leader's persister in a cluster (KIP-932): reads and writes of a
share-partition's durable state go to its share coordinator, the leader of the
`__share_group_state` partition its key hashes to: in this process when that is this broker,
else as ReadShareGroupState / WriteShareGroupState on one connection per coordinator broker.

Requests to one broker go one at a time, in the order they were made (every write is a whole
snapshot, so a later one must never be overtaken by an earlier one). A coordinator that is
unknown, unreachable or answers NOT_COORDINATOR gives the caller an error code: the
acknowledgement waiting for the write fails (the client may acknowledge again), a load is
tried again on the member's next fetch.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from ...protocol import messages
from ...protocol.errors import ErrorCode
from ..cluster.peer_connections import FAILURES, PeerConnections
from . import state_records as S

log = logging.getLogger("gregor.broker.share.persister")
E = ErrorCode
READ = messages.api("ReadShareGroupState")
WRITE = messages.api("WriteShareGroupState")


def to_batches(runs) -> list[dict]:
    return [{"first_offset": f, "last_offset": la, "delivery_state": s, "delivery_count": c}
            for f, la, s, c in runs]


def from_answer(p: dict) -> dict | None:
    """A ReadShareGroupState partition result as a state (None: not initialised; start -1
    with a state epoch: reset or deleted, to start where share.auto.offset.reset says)."""
    if p["start_offset"] < 0:
        return None if p["state_epoch"] <= 0 else {
            "state_epoch": p["state_epoch"], "start_offset": -1, "end_offset": -1,
            "batches": []}
    batches = [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
               for b in p["state_batches"]]
    end = max([b[1] + 1 for b in batches], default=p["start_offset"])
    return {"state_epoch": p["state_epoch"], "start_offset": p["start_offset"],
            "end_offset": max(end, p["start_offset"]), "batches": batches}


class ClusterPersister:
    def __init__(self, broker, coordinator):
        self.broker = broker
        self.coordinator = coordinator
        self.peers = PeerConnections(broker, "gregor-share")

    def _leader(self, key: tuple) -> int:
        view = self.broker.cluster.snapshot.topics.get(S.TOPIC)
        part = self.coordinator.partition_of(key)
        state = view.states.get(part) if view is not None else None
        return state.leader if state is not None else -1

    # -- writing -----------------------------------------------------------------------------

    def write(self, key: tuple, state: dict, leader_epoch: int,
              done: Callable[[int], None] | None) -> None:
        done = done or (lambda code: None)
        leader = self._leader(key)
        if leader == self.broker.cluster.broker_id:
            self.coordinator.write(key, state, leader_epoch, done)
            return
        if leader < 0:
            done(E.COORDINATOR_NOT_AVAILABLE)
            return
        group_id, topic_id, partition = key
        body = {"group_id": group_id, "topics": [{"topic_id": topic_id, "partitions": [{
            "partition": partition, "state_epoch": state["state_epoch"],
            "leader_epoch": leader_epoch, "start_offset": state["start_offset"],
            "state_batches": to_batches(state["batches"])}]}]}

        async def send():
            answer = await self._request(leader, WRITE, body)
            done(_code(answer))
        asyncio.ensure_future(send())

    # -- reading -----------------------------------------------------------------------------

    async def read(self, key: tuple, leader_epoch: int) -> tuple[int, dict | None]:
        leader = self._leader(key)
        if leader == self.broker.cluster.broker_id:
            return self.coordinator.read(key, leader_epoch)
        if leader < 0:
            return E.COORDINATOR_NOT_AVAILABLE, None
        group_id, topic_id, partition = key
        answer = await self._request(leader, READ, {"group_id": group_id, "topics": [
            {"topic_id": topic_id, "partitions": [
                {"partition": partition, "leader_epoch": leader_epoch}]}]})
        code = _code(answer)
        if code:
            return code, None
        return E.NONE, from_answer(answer["results"][0]["partitions"][0])

    # -- connections -------------------------------------------------------------------------

    async def _request(self, broker_id: int, api, body: dict) -> dict | None:
        try:
            return await self.peers.request(broker_id, api, 0, body)
        except FAILURES as e:
            log.info("%s to broker %d failed (%s)", api.name, broker_id, e or type(e).__name__)
            return None

    def close(self) -> None:
        self.peers.close()


def _code(answer: dict | None) -> int:
    if answer is None:
        return E.COORDINATOR_NOT_AVAILABLE
    try:
        return answer["results"][0]["partitions"][0]["error_code"]
    except (KeyError, IndexError):
        return E.UNKNOWN_SERVER_ERROR
