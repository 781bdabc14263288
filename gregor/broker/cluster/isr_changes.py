"""The ISR of the partitions this broker leads, changed through the controller (AlterPartition,
KIP-497, as Kafka's ZooKeeper-mode brokers did from 2.7).

Every replica.lag.time.max.ms / 2 a leader looks for followers not caught up within the lag
time (shrinks only); when a follower's fetch shows it caught up (it reached the high
watermark) it looks at once whether it may rejoin (expansions come only from fetches);
either change goes to the controller as AlterPartition with the leader epoch and the partition
epoch (the state's zkVersion) it acts on. While the request is out, the leader counts the ISR as
the union of the old and the new ("maximal ISR": a high watermark never passes a replica that
may be in the ISR). The controller writes the new state to ZooKeeper, fenced, answers with it,
and tells the other brokers by UpdateMetadata. Refusals: FENCED_LEADER_EPOCH (a new leader was
elected: LeaderAndIsr follows), INVALID_UPDATE_VERSION (our partition epoch is behind: the
UpdateMetadata we are sent carries the current one, which we adopt), NOT_CONTROLLER or no
answer (asked again shortly, at the controller then named). A leader cut off from ZooKeeper
changes nothing (its session may be gone, and with it its leadership).
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol import messages
from ...protocol.errors import ErrorCode, KafkaError
from . import znodes as z

log = logging.getLogger("gregor.broker.cluster")

ALTER_PARTITION_VERSION = 1         # topic names, as Kafka's ZooKeeper-mode brokers send
RETRY_S = 0.2


class IsrChangesMixin:
    """Part of ClusterMember (member.py)."""

    async def _isr_loop(self) -> None:
        lag_ms = int(self.broker.config.get("replica.lag.time.max.ms"))
        while not self._closed:
            await asyncio.sleep(max(0.05, lag_ms / 2000.0))
            try:
                self.check_isr()
            except Exception:
                log.exception("ISR check failed")

    def check_isr(self, only=None) -> None:
        """Ask for an ISR change of every led partition whose ISR should shrink (the
        periodic check), or of `only` (after its follower fetched) whose ISR should change."""
        if not self._registered or not self.session.connected or not self.store.connected \
                or self._closed:
            return               # a leader cut off from ZooKeeper changes nothing
        lag_ms = int(self.broker.config.get("replica.lag.time.max.ms"))
        now_ms = int(time.time() * 1000)
        parts = [only] if only is not None else self.broker.replica_manager.partitions.values()
        for part in parts:
            if not part.is_leader or part.key in self._isr_writes or part.zk_state is None \
                    or part.isr_refused_at is part.zk_state:
                continue             # (refused at this state: wait for the controller's next)
            new = part.isr_change(now_ms, lag_ms, expand=only is not None)
            if new is not None:
                self._isr_writes.add(part.key)
                asyncio.get_running_loop().create_task(self._alter_isr(part, new))

    async def _alter_isr(self, part, isr: list[int]) -> None:
        old = part.zk_state
        part.pending_isr = isr
        try:
            answer = await self._send_alter_partition(part, old, isr)
        finally:
            part.pending_isr = None
            self._isr_writes.discard(part.key)
        code, state = answer
        if code == ErrorCode.NONE and state is not None:
            if part.is_leader and part.zk_state is old and state.leader == self.broker_id \
                    and state.leader_epoch == old.leader_epoch:
                log.info("%s-%d: ISR %s -> %s", part.topic, part.index, old.isr, state.isr)
                self._adopt(part, state)
                self.isr_writes += 1
            return
        if code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
                    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            log.info("%s-%d: ISR change to %s refused (%s); waiting for the controller's "
                     "state", part.topic, part.index, isr, ErrorCode(code).name)
            part.isr_refused_at = part.zk_state
            return
        # no controller, no answer, or a replica not eligible yet: ask again shortly
        log.info("%s-%d: ISR change to %s not made (%s); asking again", part.topic, part.index,
                 isr, ErrorCode(code).name if code is not None else "no answer")
        asyncio.get_running_loop().call_later(RETRY_S, self.check_isr, part)

    def _adopt(self, part, state: z.PartitionState) -> None:
        part.zk_state = state
        part.isr = list(state.isr)
        part.state_zk_version = state.zk_version
        part.maybe_advance_high_watermark()
        self.broker.replica_manager.notify(part)

    def adopt_partition_epoch(self, part, state: z.PartitionState) -> None:
        """UpdateMetadata carries a newer partition epoch of a partition we lead at the same
        leader epoch: an ISR change of ours whose answer we lost. Take it."""
        cur = part.zk_state
        if part.is_leader and cur is not None and state.leader == self.broker_id and \
                state.leader_epoch == cur.leader_epoch and state.zk_version > cur.zk_version:
            self._adopt(part, z.PartitionState(state.leader, state.leader_epoch,
                                               list(state.isr), state.controller_epoch,
                                               state.zk_version))

    async def _send_alter_partition(self, part, old: z.PartitionState, isr: list[int]):
        """(error code or None for no answer, the state the controller answered with)."""
        body = {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch, "topics": [{
            "topic_name": part.topic, "partitions": [{
                "partition_index": part.index, "leader_epoch": old.leader_epoch,
                "new_isr": list(isr), "leader_recovery_state": 0,
                "partition_epoch": old.zk_version}]}]}
        ctrl = self.snapshot.controller_id
        try:
            if ctrl == self.broker_id and self.controller.active:
                answer = await self.controller.alter_partition(body, ALTER_PARTITION_VERSION)
            else:
                answer = await self._ask_controller_alter(ctrl, body)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError,
                KafkaError) as e:
            log.info("AlterPartition to controller %d failed: %s", ctrl, e or type(e).__name__)
            return None, None
        if answer is None:
            return None, None
        if answer["error_code"]:
            return answer["error_code"], None
        for t in answer["topics"]:
            for pd in t["partitions"]:
                if pd["partition_index"] == part.index:
                    if pd["error_code"]:
                        return pd["error_code"], None
                    return ErrorCode.NONE, z.PartitionState(
                        pd["leader_id"], pd["leader_epoch"], list(pd["isr"]),
                        self.controller_epoch_seen, pd["partition_epoch"])
        return None, None

    async def _ask_controller_alter(self, ctrl: int, body: dict) -> dict | None:
        endpoint = self._endpoint(ctrl) if ctrl >= 0 else None
        if endpoint is None:
            return None
        async with self._controller_conn_lock:
            conn = self._controller_conn
            if conn is None or (conn.host, conn.port) != endpoint:
                if conn is not None:
                    conn.close()
                conn = self._controller_conn = self.broker_connection(
                    endpoint, f"gregor-broker-{self.broker_id}",
                    int(self.broker.config.get("replica.socket.timeout.ms")) / 1000.0)
            try:
                return await conn.request(messages.api("AlterPartition"),
                                          ALTER_PARTITION_VERSION, body)
            except BaseException:
                conn.close()
                self._controller_conn = None
                raise
