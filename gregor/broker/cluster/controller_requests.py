"""What a broker does with the controller's requests (ZooKeeper mode): LeaderAndIsr makes its
replicas lead or follow, UpdateMetadata replaces its metadata cache, StopReplica stops (and
deletes) replicas.

Fencing, as Kafka's brokers do it: a request from an older controller epoch than one already
seen is refused (STALE_CONTROLLER_EPOCH), and so, here, is one whose controller and epoch are
not what ZooKeeper says (Kafka's brokers take the epoch on trust), as is one meant for an
earlier registration of this
broker (STALE_BROKER_EPOCH: it would describe a cluster from before this broker came back).
Per partition, a LeaderAndIsr with an older leader epoch is refused (FENCED_LEADER_EPOCH) and
one that is not newer than what the replica acts on is ignored (STALE_CONTROLLER_EPOCH), except
in a full request (type 1, sent when this broker was told nothing yet), which restates the
current state. A full LeaderAndIsr also names every replica this broker should hold: the others
on its disk are stray (their topic was deleted, or deleted and created again, while it was
down) and are deleted, as Kafka does after its first full LeaderAndIsr.

Requests are applied one at a time in the order they arrive (one lock), so a later request
never overtakes an earlier one while the earlier waits for a topic's configs.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.errors import ErrorCode
from ..topics import TopicInfo, topic_name_error
from .controller import MAX_PARTITIONS_PER_TOPIC
from . import znodes as z
from .metadata_cache import apply_update_metadata
from .propagation import FULL

log = logging.getLogger("gregor.broker.cluster")


class ControllerRequestsMixin:
    """Part of ClusterMember (member.py)."""

    async def take_push(self, push) -> dict:
        """A request of our own controller, taken without the network (controller_channel)."""
        if push.api == "LeaderAndIsr":
            code, topics = await self.on_leader_and_isr(push.body)
            return {"error_code": code, "topics": topics}
        if push.api == "StopReplica":
            code, errors = await self.on_stop_replica(push.body)
            return {"error_code": code, "partition_errors": errors}
        return {"error_code": await self.on_update_metadata(push.body)}

    async def _check_sender(self, body: dict) -> int:
        """NONE if the request comes from the controller ZooKeeper names, at its epoch, for
        this registration of ours. The controller and epoch are checked against ZooKeeper
        (read again when the request names a newer epoch than we last read: its election's
        watch may not have fired here yet), so a request with a made-up epoch cannot make
        this broker refuse the real controller from then on."""
        ctrl, epoch_in = body["controller_id"], body["controller_epoch"]
        if epoch_in > self.zk_controller[1]:
            try:
                await self.refresh_now()
            except Exception as e:
                log.info("cannot read the controller from ZooKeeper (%s); refusing for now", e)
                return ErrorCode.STALE_CONTROLLER_EPOCH        # the controller asks again
        if epoch_in < self.controller_epoch_seen or (ctrl, epoch_in) != self.zk_controller:
            if epoch_in >= self.zk_controller[1]:
                log.warning("refusing a request from broker %d at controller epoch %d: "
                            "ZooKeeper names broker %d at epoch %d", ctrl, epoch_in,
                            *self.zk_controller)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        epoch = body.get("broker_epoch", -1)
        if epoch != -1 and epoch < self.broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        self.controller_epoch_seen = body["controller_epoch"]
        if epoch != -1:
            self.told_epoch = epoch
        return ErrorCode.NONE

    def _told(self) -> None:
        """Something the controller said was applied: wake whoever waits for it."""
        self.pushes_applied += 1
        self._pushed.set()
        self._pushed = asyncio.Event()
        self.maybe_accept_clients()

    async def wait_for_cache(self, ready, timeout_s: float) -> bool:
        """Until ready() is true of what this broker was told, or the timeout passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        while not ready():
            left = deadline - loop.time()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(self._pushed.wait(), left)
            except asyncio.TimeoutError:
                return bool(ready())
        return True

    # -- UpdateMetadata --------------------------------------------------------------------

    async def on_update_metadata(self, body: dict) -> int:
        async with self._push_lock:
            code = await self._check_sender(body)
            if code:
                return code
            touched = apply_update_metadata(self.snapshot, body, self.configs)
            if body.get("broker_epoch", -1) != -1:
                # the cluster as the controller sees it, told to this registration of ours
                # (after the full LeaderAndIsr, which comes first): clients may ask us again
                self.metadata_epoch = body["broker_epoch"]
            b = self.broker
            for name in touched:
                view, local = self.snapshot.topics.get(name), b.store.get(name)
                if view is not None and local is not None:
                    count = len(view.assignment.partitions)
                    if local.partitions < count:
                        b.store.set_partitions(name, count)    # CreatePartitions
                    for part in b.replica_manager.topic_partitions(name):
                        state = view.states.get(part.index)
                        if state is not None:
                            self.adopt_partition_epoch(part, state)
            self._told()
            return ErrorCode.NONE

    # -- StopReplica -----------------------------------------------------------------------

    async def on_stop_replica(self, body: dict) -> tuple[int, list]:
        async with self._push_lock:
            code = await self._check_sender(body)
            if code:
                return code, []
            errors = []
            rm = self.broker.replica_manager
            for t in body["topic_states"]:
                name = t["topic_name"]
                listed = {ps["partition_index"]: ps for ps in t["partition_states"]}
                local = rm.topic_partitions(name)
                for part in local:
                    if part.index in listed:
                        self._stop(part)
                delete = all(ps["delete_partition"] for ps in listed.values())
                if delete and local and {p.index for p in local} <= set(listed) \
                        and not name.startswith("__"):
                    log.info("deleting the replicas of topic %r (StopReplica from controller "
                             "%d)", name, body["controller_id"])
                    self._delete_replicas(name)
                errors += [{"topic_name": name, "partition_index": p,
                            "error_code": ErrorCode.NONE} for p in listed]
            self._told()
            return ErrorCode.NONE, errors

    def _stop(self, part) -> None:
        self.fetchers.unfollow(part.key)
        self._left_leadership(part)
        if part.is_leader:
            part.make_follower(-1, part.leader_epoch, part.isr, part.replicas,
                               part.state_zk_version)
            self.broker.replica_manager.notify(part)

    # -- LeaderAndIsr ----------------------------------------------------------------------

    async def on_leader_and_isr(self, body: dict) -> tuple[int, list]:
        async with self._push_lock:
            code = await self._check_sender(body)
            if code:
                return code, []
            for ll in body["live_leaders"]:
                self._leader_endpoints[ll["broker_id"]] = (ll["host_name"], ll["port"])
            full = body.get("type", 0) == FULL
            if full:
                self._drop_strays(body["topic_states"])
            out = []
            for t in body["topic_states"]:
                name, topic_id = t["topic_name"], z.topic_id_text(t.get("topic_id"))
                if topic_name_error(name) or any(
                        not 0 <= ps["partition_index"] < MAX_PARTITIONS_PER_TOPIC
                        for ps in t["partition_states"]):
                    # never from a real controller; a name or index that would put files
                    # outside this topic's directories is refused, nothing opened
                    log.warning("LeaderAndIsr names topic %r with partitions %s: refused",
                                name, [ps["partition_index"] for ps in t["partition_states"]])
                    out.append({"topic_id": t.get("topic_id") or bytes(16),
                                "partition_errors": [
                                    {"partition_index": ps["partition_index"],
                                     "error_code": ErrorCode.INVALID_REQUEST}
                                    for ps in t["partition_states"]]})
                    continue
                info = await self._local_topic(name, topic_id, t["partition_states"])
                codes = []
                for ps in t["partition_states"]:
                    codes.append({"partition_index": ps["partition_index"],
                                  "error_code": self._lead_or_follow(info, ps, full)})
                out.append({"topic_id": t.get("topic_id") or bytes(16),
                            "partition_errors": codes})
            self._told()
            return ErrorCode.NONE, out

    async def _local_topic(self, name: str, topic_id: str | None, states: list) -> TopicInfo:
        """The topic as stored here, created (with its configs read from ZooKeeper) when
        this broker holds none of it yet; a local topic with another id is a deleted one's."""
        b = self.broker
        t = b.store.get(name)
        if t is not None and topic_id and t.topic_id != z.topic_id_hex(topic_id) \
                and not name.startswith("__"):
            log.warning("topic %r was deleted and created again (topic id %s, this broker's "
                        "replicas are of %s): deleting the old replicas", name,
                        z.topic_id_hex(topic_id), t.topic_id)
            self._delete_replicas(name)
            t = None
        count = max(ps["partition_index"] for ps in states) + 1 if states else 1
        view = self.snapshot.topics.get(name)
        if view is not None:
            count = max(count, len(view.assignment.partitions))
        if t is None:
            if name not in self.configs:
                self.configs[name] = await self.store.topic_config(name)
            t = TopicInfo(name, z.topic_id_hex(topic_id), count, dict(self.configs[name]),
                          int(time.time() * 1000))
            b.store.topics[name] = t
            b.store.save()
        elif t.partitions < count:
            b.store.set_partitions(name, count)
        return t

    def _lead_or_follow(self, info: TopicInfo, ps: dict, full: bool) -> int:
        b = self.broker
        p = ps["partition_index"]
        part = b.replica_manager.get(info.name, p)
        if part is None:
            part = b._open_partition(info.name, p, b.topic_config(info))
        new = (ps["leader_epoch"], ps["partition_epoch"])
        cur = part.zk_state
        if cur is not None:
            have = (cur.leader_epoch, cur.zk_version)
            if new[0] < have[0]:
                return ErrorCode.FENCED_LEADER_EPOCH
            if new < have or (new == have and not full):
                return ErrorCode.STALE_CONTROLLER_EPOCH       # not newer: ignored
        state = z.PartitionState(ps["leader"], ps["leader_epoch"], list(ps["isr"]),
                                 ps["controller_epoch"], ps["partition_epoch"])
        self._apply_state(part, state, list(ps["replicas"]))
        return ErrorCode.NONE

    def _drop_strays(self, topic_states: list) -> None:
        """After a full LeaderAndIsr: replicas on disk of topics it does not name (deleted
        while this broker was down) or names under another topic id (deleted and created
        again) are deleted. The cluster id check at join (meta.properties against
        /cluster/id) ensures this is the cluster the data came from. Internal topics are
        never deleted this way."""
        given = {t["topic_name"]: z.topic_id_text(t.get("topic_id")) for t in topic_states}
        for name, local in sorted(self.broker.store.topics.items()):
            if name.startswith("__"):
                continue
            if name in given:
                zk_id = given[name]
                if zk_id is None or z.topic_id_hex(zk_id) == local.topic_id:
                    continue
                why = f"was recreated (topic id {z.topic_id_hex(zk_id)}, this replica's " \
                      f"{local.topic_id})"
            else:
                why = "is no longer in the cluster (or not on this broker)"
            log.warning("deleting the stray replica(s) of topic %r on disk: the topic %s "
                        "while this broker was down", name, why)
            self._delete_replicas(name)

    def _delete_replicas(self, name: str) -> None:
        """Every local replica of a topic, fetchers stopped and data deleted."""
        for part in self.broker.replica_manager.topic_partitions(name):
            self.fetchers.unfollow(part.key)
        self.broker.delete_local_topic(name)
