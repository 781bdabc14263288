"""The controller: elected through ephemeral /controller, fenced by /controller_epoch.

Whichever broker creates /controller (bumping /controller_epoch in the same multi-op) is the
controller until its session ends. Every broker watches /controller and runs for election when
it vanishes. The controller:
- creates topics (CreateTopics): replica assignment, configs and initial partition states in
  one multi-op;
- moves leadership when brokers come and go (Kafka's offline-partition election, unclean
  election off), writing each new state conditioned on its zkVersion and on the epoch; a
  broker that registered again under a new session between two of its reads (same id, newer
  broker epoch) is handled as a failure followed by a startup, as Kafka's controller handles
  its bouncedBrokerIds (KAFKA-7235);
- changes a partition's ISR when its leader asks (AlterPartition, KIP-497), with the same
  fencing;
- tells the brokers what changed (LeaderAndIsr, UpdateMetadata, StopReplica: propagation.py
  plans them, controller_channel.py delivers them), after each of its reads of ZooKeeper.
A controller whose session is SUSPENDED or LOST stops acting at once: its successor may already
be elected, and the epoch check would refuse its writes anyway.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.errors import (ErrorCode, InvalidPartitionsError,
                                InvalidReplicaAssignmentError, InvalidReplicationFactorError,
                                InvalidRequestError, InvalidTopicError, NotControllerError,
                                StaleBrokerEpochError, TopicAlreadyExistsError,
                                UnknownTopicOrPartitionError)
from ..config import checked_topic_configs
from ..topics import new_uuid_string, topic_name_error
from . import znodes as z
from .assignment import (AssignmentError, assign_replicas, bounced_brokers, elect_after_bounce,
                         initial_state)
from .controller_channel import ControllerChannel
from .metadata_store import (AlreadyExists, ClusterSnapshot, Conflict, ControllerMoved,
                             Disconnected, MetadataStore)
from .propagation import PushPlanner

log = logging.getLogger("gregor.broker.cluster.controller")

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
MAX_PARTITIONS_PER_TOPIC = 10_000     # as the single-node broker: bounded work per request


class Controller:
    def __init__(self, broker_id: int, store: MetadataStore, config, listener: str | None = None,
                 local=None, security=None):
        self.broker_id = broker_id
        self.security = security          # InterBrokerSecurity: how we reach the brokers
        self.local = local                # async push -> response: our own broker's handlers
        self.store = store
        self.config = config
        self.listener = listener          # inter.broker.listener.name: where brokers are told
        self.view = ClusterSnapshot()     # the cluster as this controller last read it
        self.planner: PushPlanner | None = None
        self.channel: ControllerChannel | None = None
        self.active = False
        # held while acting on a read of ZooKeeper or on an AlterPartition, so a slower read
        # never overwrites what an AlterPartition just wrote
        self.lock = asyncio.Lock()
        self.epoch = 0
        self.epoch_zk_version = -1
        self.connected = True
        self.elections = 0               # times this broker won, for tests and logs
        self.shutting_down: set[int] = set()   # brokers in a controlled shutdown
        # each live broker's epoch as this controller last acted on it (Kafka's
        # liveBrokerIdAndEpochs); None until its first read in this term
        self.known_epochs: dict[int, int] | None = None
        self.bounces = 0                 # bounced brokers handled, for tests and logs

    # -- election --------------------------------------------------------------------------

    async def maybe_elect(self, snap: ClusterSnapshot) -> bool:
        """Run for controller when there is none; True if this broker became it."""
        if self.active or not self.connected or snap.controller_id != -1:
            return False
        won = await self.store.try_become_controller(self.broker_id, int(time.time() * 1000))
        if won is None:
            return False
        self.epoch, self.epoch_zk_version = won
        self.active = True
        self.known_epochs = None         # a new term starts from what it reads
        self.elections += 1
        log.info("broker %d is now the controller (controller epoch %d)", self.broker_id,
                 self.epoch)
        return True

    def step_down(self, why: str) -> None:
        if self.active:
            log.warning("broker %d stops acting as controller: %s", self.broker_id, why)
        self.active = False
        self.planner = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def _endpoint(self, broker_id: int):
        info = self.view.brokers.get(broker_id)
        return None if info is None else info.endpoint(self.listener)

    async def told(self, timeout_s: float) -> bool:
        """Until every live broker has taken what it was told so far (CreateTopics and the
        like answer then, so whichever broker a client asks next knows the change)."""
        return self.channel is None or await self.channel.delivered(timeout_s)

    def propagate(self, snap: ClusterSnapshot) -> int:
        """Tell the brokers what changed since what they were told; returns how many
        requests were queued. A newly active controller tells every broker everything."""
        if not self.active:
            return 0
        if self.planner is None:
            self.planner = PushPlanner(self.broker_id, self.epoch)
            timeout = int(self.config.get("replica.socket.timeout.ms")) / 1000.0
            self.channel = ControllerChannel(self.broker_id, self.local, self._endpoint,
                                             f"gregor-controller-{self.broker_id}", timeout,
                                             self.security)
        self.channel.sync(snap.broker_epochs)
        pushes = self.planner.plan(snap)
        self.channel.send(pushes)
        return len(pushes)

    def on_session(self, state: str) -> None:
        self.connected = state == "CONNECTED"
        if state in ("SUSPENDED", "LOST"):
            self.step_down(f"ZooKeeper session {state}")

    async def on_snapshot(self, snap: ClusterSnapshot) -> None:
        self.view = snap
        if self.active and snap.controller_id != self.broker_id:
            self.step_down(f"/controller now names broker {snap.controller_id}")
        if not self.active and self.connected and snap.controller_id == self.broker_id \
                and snap.controller_epoch == self.epoch and self.epoch:
            # Back from SUSPENDED within the same session: /controller is still ours and
            # nobody bumped the epoch, so the fencing version we hold is still valid.
            self.active = True
            log.info("broker %d resumes as controller (epoch %d)", self.broker_id, self.epoch)
        if await self.maybe_elect(snap):
            return                       # a fresh snapshot follows (the /controller watch)
        if self.active:
            await self.reconcile(snap)
            self.propagate(snap)

    # -- leadership ------------------------------------------------------------------------

    async def reconcile(self, snap: ClusterSnapshot) -> int:
        """Elect leaders for partitions whose leader or ISR members are gone (or are back
        from offline); returns how many states were written."""
        # a broker in controlled shutdown is still live here: what it could not hand over
        # stays with it until it is gone (then it is an ordinary dead broker)
        self.shutting_down &= set(snap.brokers)
        live = set(snap.brokers)
        bounced = bounced_brokers(self.known_epochs, snap.broker_epochs) \
            if self.known_epochs is not None else set()
        if bounced:
            epochs = ", ".join(f"{self.known_epochs[b]} -> {snap.broker_epochs[b]}"
                               for b in sorted(bounced))
            log.info("broker(s) %s registered again under a new ZooKeeper session (broker "
                     "epoch %s): handled as a failure followed by a startup",
                     sorted(bounced), epochs)
        deleted = await self._delete_marked(snap)
        updates, fresh = [], []
        for name, view in snap.topics.items():
            if view.deleting:
                continue
            for p, replicas in view.assignment.partitions.items():
                state = view.states.get(p)
                if state is None:
                    # Assigned by another broker (auto-creation): Kafka's NewPartition ->
                    # OnlinePartition, done by the controller only.
                    fresh.append((name, p, initial_state(replicas, live, self.epoch)))
                    continue
                new = elect_after_bounce(replicas, state, live, bounced, self.epoch,
                                         self._unclean(view))
                if new is not None:
                    new.zk_version = state.zk_version
                    updates.append((name, p, new))
        if not updates and not fresh:
            self._acted_on(snap, bounced)
            return deleted
        try:
            await self.store.create_states(fresh, self.epoch_zk_version)
            await self.store.update_states(updates, self.epoch_zk_version)
        except ControllerMoved:
            self.step_down("/controller_epoch moved on (another controller was elected)")
            return 0
        except Conflict:
            return 0                     # a state changed meanwhile; the watch re-runs us
        self._acted_on(snap, bounced)
        for name, p, s in fresh + updates:
            log.info("%s-%d: leader %d, leader epoch %d, ISR %s", name, p, s.leader,
                     s.leader_epoch, s.isr)
        # What was written is what the brokers are told now, in the same requests as the
        # broker list that caused it (the watch's re-read then finds nothing new to tell).
        for name, p, s in fresh:
            s.zk_version = 0
            snap.topics[name].states[p] = s
        for name, p, s in updates:
            s.zk_version += 1
            snap.topics[name].states[p] = s
        return len(fresh) + len(updates)

    def _acted_on(self, snap: ClusterSnapshot, bounced: set[int]) -> None:
        """The brokers' epochs are handled: a later read compares with these."""
        self.known_epochs = dict(snap.broker_epochs)
        self.bounces += len(bounced)

    # -- AlterPartition --------------------------------------------------------------------

    async def alter_partition(self, body: dict, version: int) -> dict:
        """A leader's ISR change (Kafka's rules): the leader epoch must be the current one
        (FENCED_LEADER_EPOCH), the partition epoch too (INVALID_UPDATE_VERSION; a request
        whose change is already there is answered with the current state), the new ISR must
        hold the leader and only live replicas, at their current broker epoch (v3)
        (INELIGIBLE_REPLICA). The write is fenced like every controller write; the brokers
        then learn the new ISR by UpdateMetadata."""
        if not self.active:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}
        async with self.lock:
            snap = self.view
            requester = body["broker_id"]
            epoch = body.get("broker_epoch", -1)
            if requester not in snap.brokers or (
                    epoch != -1 and epoch != snap.broker_epochs.get(requester)):
                return {"throttle_time_ms": 0, "error_code": ErrorCode.STALE_BROKER_EPOCH,
                        "topics": []}
            ids = {z.topic_id_bytes(v.assignment.topic_id): n for n, v in snap.topics.items()}
            out, writes = [], []
            for t in body["topics"]:
                name = t.get("topic_name") if version < 2 else ids.get(t.get("topic_id"))
                results = []
                for pd in t["partitions"]:
                    code, state = self._check_isr_change(snap, name, requester, pd, version)
                    if code == ErrorCode.NONE and state is not None:
                        writes.append((name, pd["partition_index"], state))
                    results.append((pd["partition_index"], code, state))
                out.append((t, name, results))
            if writes:
                try:
                    await self.store.update_states(writes, self.epoch_zk_version)
                except ControllerMoved:
                    self.step_down("/controller_epoch moved on (another controller was elected)")
                    return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER,
                            "topics": []}
                except Disconnected as e:
                    # our session is in doubt: the leader asks again, at whichever broker
                    # is the controller by then
                    log.info("AlterPartition of broker %d not written: %s", requester, e)
                    return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER,
                            "topics": []}
                except Conflict:
                    # a state moved under us (an election): the leader hears of it
                    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "topics": [
                        _alter_topic(t, version, [(p, ErrorCode.INVALID_UPDATE_VERSION, None)
                                                  for p, _, _ in results])
                        for t, _, results in out]}
                for name, p, state in writes:
                    state.zk_version += 1
                    snap.topics[name].states[p] = state
                    log.info("%s-%d: ISR %s (asked by leader %d)", name, p, state.isr,
                             requester)
                self.propagate(snap)
            current = [(t, version, [(p, code, state if state is not None else
                                      (snap.topics[name].states.get(p) if name in snap.topics
                                       else None))
                                     for p, code, state in results])
                       for t, name, results in out]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "topics": [_alter_topic(*c) for c in current]}

    def _check_isr_change(self, snap, name, requester, pd, version):
        """(error, new state to write or None for an answer with the current state)."""
        view = snap.topics.get(name) if name is not None else None
        p = pd["partition_index"]
        state = view.states.get(p) if view is not None and not view.deleting else None
        if state is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if state.leader != requester:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        if pd["leader_epoch"] != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None
        if version >= 3:
            members = pd["new_isr_with_epochs"]
            isr = [m["broker_id"] for m in members]
            stale = [m["broker_id"] for m in members if m["broker_epoch"] != -1
                     and m["broker_epoch"] != snap.broker_epochs.get(m["broker_id"])]
        else:
            isr, stale = list(pd["new_isr"]), []
        if isr == state.isr:
            return ErrorCode.NONE, None          # already so: answer with the current state
        if pd["partition_epoch"] != state.zk_version:
            return ErrorCode.INVALID_UPDATE_VERSION, None
        replicas = view.assignment.partitions.get(p, [])
        live = set(snap.brokers) - self.shutting_down
        if requester not in isr or len(set(isr)) != len(isr) or stale or any(
                b not in replicas or (b not in live and b not in state.isr) for b in isr):
            return ErrorCode.INELIGIBLE_REPLICA, None
        return ErrorCode.NONE, z.PartitionState(state.leader, state.leader_epoch, isr,
                                                self.epoch, state.zk_version)

    async def _delete_marked(self, snap: ClusterSnapshot) -> int:
        """Delete the topics marked under /admin/delete_topics (Kafka's ZooKeeper-mode
        deletion; the replicas are told to delete theirs with StopReplica)."""
        done = 0
        for name, view in list(snap.topics.items()):
            if not view.deleting:
                continue
            parts = sorted(p for p in view.assignment.partitions if p in view.states)
            try:
                await self.store.delete_topic(name, parts, self.epoch_zk_version)
            except ControllerMoved:
                self.step_down("/controller_epoch moved on (another controller was elected)")
                return done
            except Conflict as e:
                log.warning("deleting topic %r: %s; retried at the next change", name, e)
                continue
            log.info("deleted topic %r", name)
            del snap.topics[name]          # told as deleted in this round
            done += 1
        return done

    async def add_partitions(self, snap: ClusterSnapshot, name: str, total: int,
                             assignments: list | None, validate_only: bool) -> None:
        """CreatePartitions on the controller: place the new partitions (round robin as
        Kafka's AdminUtils continues it, or the request's assignment) and write them.
        Raises the KafkaError the topic's result carries."""
        if not self.active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller "
                                     f"(broker {snap.controller_id} is)")
        view = snap.topics.get(name)
        if view is None or view.deleting:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        current = len(view.assignment.partitions)
        if total <= current:
            raise InvalidPartitionsError(
                f"topic {name!r} has {current} partitions; the new count {total} must be "
                "larger (partitions cannot be removed)")
        if total > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidPartitionsError(f"{total} partitions is more than a topic may have "
                                         f"here ({MAX_PARTITIONS_PER_TOPIC})")
        rf = len(view.assignment.partitions[0])
        live = sorted(snap.brokers)
        if assignments:
            if len(assignments) != total - current:
                raise InvalidReplicaAssignmentError(
                    f"{len(assignments)} assignments given for {total - current} new partitions")
            new = {}
            for i, a in enumerate(assignments):
                ids = list(a.get("broker_ids") or [])
                if len(ids) != rf or len(set(ids)) != rf or any(b not in snap.brokers
                                                                 for b in ids):
                    raise InvalidReplicaAssignmentError(
                        f"assignment {ids} must name {rf} distinct registered brokers "
                        f"(live: {live})")
                new[current + i] = ids
        else:
            try:
                new = assign_replicas(live, total - current, rf, start_partition=current)
            except AssignmentError as e:
                raise InvalidReplicationFactorError(f"{e} (live brokers: {live})") from None
        if validate_only:
            return
        full = dict(view.assignment.partitions)
        full.update(new)
        states = {p: initial_state(r, set(snap.brokers), self.epoch) for p, r in new.items()}
        try:
            await self.store.add_partitions(name, z.TopicAssignment(full,
                                                                    view.assignment.topic_id),
                                            states, self.epoch_zk_version)
        except ControllerMoved:
            self.step_down("/controller_epoch moved on (another controller was elected)")
            raise NotControllerError("the controller changed while adding partitions; "
                                     "retry") from None
        except Conflict as e:
            raise InvalidRequestError(f"{e}; retry") from None
        log.info("topic %r: partitions %d..%d added: %s", name, current, total - 1,
                 ", ".join(f"{p}->{r}" for p, r in sorted(new.items())))

    async def delete_topics(self, snap: ClusterSnapshot, names: list[str]) -> dict:
        """DeleteTopics on the controller: mark each topic for deletion; {name: error}."""
        if not self.active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller "
                                     f"(broker {snap.controller_id} is)")
        out = {}
        for name in names:
            if name not in snap.topics:
                out[name] = UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            elif name in INTERNAL_TOPICS:
                out[name] = InvalidTopicError(f"{name!r} is an internal topic")
            else:
                await self.store.mark_for_deletion(name)
                out[name] = None
        return out

    def _unclean(self, view) -> bool:
        value = view.configs.get("unclean.leader.election.enable")
        if value is None:
            return bool(self.config.get("unclean.leader.election.enable"))
        return str(value).strip().lower() == "true"

    # -- controlled shutdown ---------------------------------------------------------------

    async def controlled_shutdown(self, snap: ClusterSnapshot, broker_id: int,
                                  broker_epoch: int = -1) -> list:
        """Move every leadership of broker_id to another live ISR member and take it out of
        the ISRs it is in (Kafka's ControlledShutdown); returns the (topic, partition) pairs
        it still leads (no other ISR member to take over). Raises NotControllerError, and
        StaleBrokerEpochError for a request of an earlier registration of the broker (it
        was sent before the broker lost its session; Kafka refuses it the same way)."""
        if not self.active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        if broker_epoch != -1 and broker_epoch < snap.broker_epochs.get(broker_id, -1):
            raise StaleBrokerEpochError(
                f"broker {broker_id} asked at broker epoch {broker_epoch}, but it registered "
                f"again since (epoch {snap.broker_epochs[broker_id]})")
        self.shutting_down.add(broker_id)
        live = set(snap.brokers) - self.shutting_down
        updates, remaining = [], []
        for name, view in snap.topics.items():
            for p, replicas in view.assignment.partitions.items():
                state = view.states.get(p)
                if state is None or broker_id not in replicas:
                    continue
                others = [b for b in replicas if b in state.isr and b in live]
                if state.leader == broker_id:
                    if not others:
                        remaining.append((name, p))
                        continue
                    new = z.PartitionState(others[0], state.leader_epoch + 1, others,
                                           self.epoch, state.zk_version)
                elif broker_id in state.isr and len(state.isr) > 1:
                    new = z.PartitionState(state.leader, state.leader_epoch + 1,
                                           [b for b in state.isr if b != broker_id],
                                           self.epoch, state.zk_version)
                else:
                    continue
                updates.append((name, p, new))
        try:
            await self.store.update_states(updates, self.epoch_zk_version)
        except ControllerMoved:
            self.step_down("/controller_epoch moved on (another controller was elected)")
            raise NotControllerError("the controller changed during the controlled "
                                     "shutdown; retry") from None
        except Conflict:
            # a state moved meanwhile: report everything it led as remaining, the broker
            # asks again after its backoff with a fresh view
            return [(n, p) for n, v in snap.topics.items() for p, s in v.states.items()
                    if s.leader == broker_id]
        for name, p, s in updates:
            log.info("controlled shutdown of broker %d: %s-%d leader %d, leader epoch %d, ISR %s",
                     broker_id, name, p, s.leader, s.leader_epoch, s.isr)
        return remaining

    # -- topics ----------------------------------------------------------------------------

    def plan_topic(self, snap: ClusterSnapshot, name: str, partitions: int,
                   replication_factor: int, assignments: list | None,
                   configs: dict[str, str | None]):
        """Validate one CreateTopics entry against the cluster; returns (assignment, configs).
        Raises the KafkaError the topic's result carries."""
        if not self.active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller "
                                     f"(broker {snap.controller_id} is)")
        problem = topic_name_error(name)
        if problem:
            raise InvalidTopicError(problem)
        if name in INTERNAL_TOPICS:
            raise InvalidTopicError(f"{name!r} is an internal topic name")
        if name in snap.topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        live = sorted(snap.brokers)
        if assignments:
            plan = {}
            for a in assignments:
                ids = list(a.get("broker_ids") or [])
                unknown = [b for b in ids if b not in snap.brokers]
                if not ids or unknown or len(set(ids)) != len(ids):
                    raise InvalidReplicaAssignmentError(
                        f"replica assignment {ids} for partition {a.get('partition_index')} "
                        f"must name distinct registered brokers (live: {live})")
                plan[int(a["partition_index"])] = ids
            if sorted(plan) != list(range(len(plan))):
                raise InvalidReplicaAssignmentError(
                    "partitions of a manual assignment must be numbered 0..n-1")
        else:
            if partitions == -1:
                partitions = int(self.config.get("num.partitions"))
            if replication_factor == -1:
                replication_factor = int(self.config.get("default.replication.factor"))
            if partitions <= 0:
                raise InvalidPartitionsError(
                    f"number of partitions must be at least 1, got {partitions}")
            if partitions > MAX_PARTITIONS_PER_TOPIC:
                raise InvalidPartitionsError(
                    f"{partitions} partitions is more than a topic may have here "
                    f"({MAX_PARTITIONS_PER_TOPIC})")
            if replication_factor <= 0:
                raise InvalidReplicationFactorError(
                    f"replication factor must be at least 1, got {replication_factor}")
            try:
                plan = assign_replicas(live, partitions, replication_factor)
            except AssignmentError as e:
                raise InvalidReplicationFactorError(
                    f"{e} (live brokers: {live}); start more brokers or lower the "
                    "replication factor") from None
        clean = checked_topic_configs(configs)
        return plan, clean

    async def create_topic(self, snap: ClusterSnapshot, name: str, plan: dict[int, list[int]],
                           configs: dict[str, str]) -> None:
        live = set(snap.brokers)
        states = {p: initial_state(r, live, self.epoch) for p, r in plan.items()}
        try:
            await self.store.create_topic(name, z.TopicAssignment(plan, new_uuid_string()),
                                          states, configs, self.epoch_zk_version)
        except ControllerMoved:
            self.step_down("/controller_epoch moved on (another controller was elected)")
            raise NotControllerError(f"broker {self.broker_id} lost the controller role "
                                     "while creating the topic; retry") from None
        except AlreadyExists:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists") from None
        log.info("created topic %r: %s", name,
                 ", ".join(f"{p}->{r}" for p, r in sorted(plan.items())))


def _alter_topic(t: dict, version: int, results) -> dict:
    parts = []
    for p, code, state in results:
        ok = code == ErrorCode.NONE and state is not None
        parts.append({"partition_index": p, "error_code": code,
                      "leader_id": state.leader if ok else -1,
                      "leader_epoch": state.leader_epoch if ok else -1,
                      "isr": list(state.isr) if ok else [], "leader_recovery_state": 0,
                      "partition_epoch": state.zk_version if ok else -1})
    entry = {"partitions": parts}
    if version < 2:
        entry["topic_name"] = t.get("topic_name")
    else:
        entry["topic_id"] = t.get("topic_id")
    return entry
