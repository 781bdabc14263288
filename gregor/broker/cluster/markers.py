"""Transaction markers in a cluster: the coordinator writes COMMIT/ABORT markers to the
partitions this broker leads itself, and sends WriteTxnMarkers to the leaders of the others
(one request per leader and transaction end, on one connection per broker, as Kafka's
transaction marker channel does). A partition whose leader is unknown or unreachable, or
that answers NOT_LEADER_OR_FOLLOWER, comes back with that error and the coordinator tries it
again after its backoff, until the marker is written (txn/coordinator.py).
"""
from __future__ import annotations

import asyncio
import logging

from ...protocol import messages
from ...protocol.errors import ErrorCode
from .peer_connections import FAILURES, PeerConnections

log = logging.getLogger("gregor.broker.cluster.markers")

WRITE_TXN_MARKERS = messages.api("WriteTxnMarkers")
VERSION = 1


class ClusterMarkers:
    def __init__(self, broker, local):
        self.broker = broker
        self.local = local                      # txn.service.LocalMarkers
        self.peers = PeerConnections(broker, "gregor-txn-markers")

    async def write(self, producer_id, producer_epoch, commit, coordinator_epoch, partitions):
        member = self.broker.cluster
        mine, remote, results = set(), {}, {}
        for tp in partitions:
            view = member.snapshot.topics.get(tp[0])
            if view is None or tp[1] not in view.assignment.partitions:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            state = view.states.get(tp[1])
            leader = state.leader if state is not None else -1
            if leader == member.broker_id:
                mine.add(tp)
            elif leader < 0:
                results[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                remote.setdefault(leader, set()).add(tp)
        jobs = [self._send(b, tps, producer_id, producer_epoch, commit, coordinator_epoch)
                for b, tps in remote.items()]
        if mine:
            jobs.append(self.local.write(producer_id, producer_epoch, commit, coordinator_epoch,
                                         mine))
        for part in await asyncio.gather(*jobs):
            results.update(part)
        return results

    async def _send(self, broker_id, tps, producer_id, producer_epoch, commit,
                    coordinator_epoch) -> dict:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(tps):
            by_topic.setdefault(t, []).append(p)
        body = {"markers": [{
            "producer_id": producer_id, "producer_epoch": producer_epoch,
            "transaction_result": bool(commit), "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}]}
        try:
            answer = await self.peers.request(broker_id, WRITE_TXN_MARKERS, VERSION, body)
        except FAILURES as e:
            log.info("WriteTxnMarkers to broker %d failed (%s); the coordinator retries",
                     broker_id, e or type(e).__name__)
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        out = {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        for m in answer["markers"]:
            for t in m["topics"]:
                for p in t["partitions"]:
                    out[(t["name"], p["partition_index"])] = p["error_code"]
        return out
