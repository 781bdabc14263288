"""One broker's membership in the cluster: joining, what it reads of ZooKeeper, and what it serves.

Join: connect to ZooKeeper, agree on the cluster id (meta.properties must match /cluster/id),
refuse a broker.id another live session holds, open the logs, listen, then register the
ephemeral /brokers/ids/<id> with the really bound port.

Propagation, as in Kafka's ZooKeeper mode: a broker reads from ZooKeeper only who the
controller is (to run for it) and the topics' configs; the rest it is told by the controller:
LeaderAndIsr says which of its replicas lead (it starts tracking followers) and which follow
(handed to the fetcher of their leader, replica_fetcher.py), UpdateMetadata fills its metadata
cache, StopReplica deletes replicas (controller_requests.py). The controller reads the whole
tree itself (controller.py) and plans what to tell (propagation.py).

A leader maintains its partitions' ISR through the controller (isr_changes.py).
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.errors import ErrorCode, KafkaError
from ..topics import TopicInfo, new_uuid_string, read_meta, write_atomically
from . import znodes as z
from ..security.inter_broker import inter_broker_security
from .assignment import AssignmentError, assign_replicas
from .broker_connection import BrokerConnection
from .controller import Controller
from .controller_requests import ControllerRequestsMixin
from .entity_configs_zk import ZkEntityConfigStore
from .errors import ClusterError
from .isr_changes import IsrChangesMixin
from .metadata_cache import apply_configs
from .metadata_store import BrokerIdInUse, ClusterSnapshot, MetadataStore, StoreError
from .producer_ids import ClusterProducerIds
from .replica_fetcher import ReplicaFetcherManager
from .session import SessionStateMachine
from .session_handling import SessionHandlingMixin
from .zk_security import zk_security

GROUPS_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
SHARE_TOPIC = "__share_group_state"

log = logging.getLogger("gregor.broker.cluster")


class ClusterMember(ControllerRequestsMixin, IsrChangesMixin, SessionHandlingMixin):
    def __init__(self, broker):
        self.broker = broker
        self.broker_id = broker.broker_id
        cfg = broker.config
        conn_ms = cfg.get("zookeeper.connection.timeout.ms")
        self.store = MetadataStore(str(cfg.get("zookeeper.connect")),
                                   session_timeout_ms=int(cfg.get("zookeeper.session.timeout.ms")),
                                   connection_timeout_ms=int(conn_ms) if conn_ms else None,
                                   security=zk_security(cfg))
        # how this broker reaches the others (TLS / SASL of the inter-broker listener)
        self.inter_broker = inter_broker_security(cfg, broker.listeners)
        self.controller = Controller(self.broker_id, self.store, cfg,
                                     listener=broker.listeners.inter_broker,
                                     local=self.take_push, security=self.inter_broker)
        self.snapshot = ClusterSnapshot()     # the metadata cache: what the controller told
        self.configs: dict[str, dict[str, str]] = {}     # /config/topics, read by us
        self.controller_epoch_seen = 0
        self.zk_controller = (-1, 0)          # (controller id, epoch) at our last read
        self.broker_epoch = -1                # our registration's czxid
        self.told_epoch = -1                  # the broker epoch of the controller's last word
        self.metadata_epoch = -1              # ... and of its last UpdateMetadata
        self._restating = False
        self._push_lock = asyncio.Lock()
        self._pushed = asyncio.Event()
        self.pushes_applied = 0
        self._leader_endpoints: dict[int, tuple[str, int]] = {}    # LeaderAndIsr's live_leaders
        self.cluster_id = ""
        self._dirty = False
        self._refreshing: asyncio.Task | None = None
        self._registered = False
        self._registered_session: int | None = None   # the session our registration is of
        self.session = SessionStateMachine()  # kazoo's reports, in order (session.py)
        self._deadline: asyncio.TimerHandle | None = None    # a suspension's deadline
        self._step_outs = 0                   # times this broker stepped out of service
        self._stepped_out_session: int | None = None
        self._closed = False
        self.producer_ids = ClusterProducerIds(self.store, self.broker_id)
        # /config/users, /config/clients, /config/ips: quotas and SCRAM credentials
        self.entity_configs = ZkEntityConfigStore(self.store)
        self._auto_creating: set[str] = set()
        self.refreshes = 0
        self.fetchers = ReplicaFetcherManager(broker, self._endpoint, self.inter_broker)
        self._isr_task: asyncio.Task | None = None
        self._hw_task: asyncio.Task | None = None
        self._isr_writes: set[tuple[str, int]] = set()
        self.isr_writes = 0               # ISR changes this broker made, for tests and logs
        self._controller_conn = None      # AlterPartition's connection to the controller
        self._controller_conn_lock = asyncio.Lock()
        self._refusing = False

    def broker_connection(self, endpoint: tuple[str, int], client_id: str,
                          timeout: float) -> BrokerConnection:
        """A connection to another broker, secured as the inter-broker listener is."""
        return BrokerConnection(endpoint[0], endpoint[1], client_id, timeout, self.inter_broker)

    # -- joining ---------------------------------------------------------------------------

    async def connect(self) -> None:
        """Before the logs open: ZooKeeper reachable, cluster id agreed, id not taken."""
        try:
            await self.store.start()
            meta = read_meta(self.broker.data_dir)
            self._check_meta_id(meta)
            # A fresh id, never the data directory's: a directory from another cluster must
            # not seed an empty ZooKeeper with its id (Kafka refuses it the same way).
            candidate = self.broker.config.get("cluster.id") or new_uuid_string()
            self.cluster_id = await self.store.cluster_id(candidate)
            await self.entity_configs.start()
        except StoreError as e:
            raise ClusterError(str(e)) from None
        stored = meta.get("cluster.id")
        if stored and stored != self.cluster_id:
            raise ClusterError(
                f"{self.broker.data_dir} belongs to cluster {stored}, but ZooKeeper at "
                f"{self.broker.config.get('zookeeper.connect')} holds cluster "
                f"{self.cluster_id}; point zookeeper.connect at that cluster's ZooKeeper or "
                "use an empty data directory")
        snap = await self.store.snapshot()
        if self.broker_id in snap.brokers:
            raise ClusterError(
                f"broker.id {self.broker_id} is already registered in ZooKeeper (by a running "
                "broker, or one that died less than zookeeper.session.timeout.ms ago); give "
                "this broker another --broker-id")
        self._write_meta()
        self.broker.config.set("cluster.id", self.cluster_id)
        await self.producer_ids.prime()

    def _check_meta_id(self, meta: dict[str, str]) -> None:
        stored = meta.get("broker.id", meta.get("node.id"))
        if stored is not None and int(stored) != self.broker_id:
            raise ClusterError(f"{self.broker.data_dir} belongs to broker {stored}, not "
                               f"{self.broker_id}; start with --broker-id {stored} or use "
                               "another directory")

    def _write_meta(self) -> None:
        d = self.broker.data_dir
        d.mkdir(parents=True, exist_ok=True)
        # Kafka's ZooKeeper-mode keys (version 0, broker.id) plus node.id, which the
        # single-node broker checks.
        text = (f"# written by gregor broker\nversion=0\nbroker.id={self.broker_id}\n"
                f"node.id={self.broker_id}\ncluster.id={self.cluster_id}\n")
        write_atomically(d / "meta.properties", text.encode())

    async def join(self) -> None:
        """After the server listens: register, read the cluster, run for controller."""
        self.session = SessionStateMachine(self.store.session_id)
        await self._register()
        self.store.on_change = self.request_refresh
        self.store.on_session = self._on_session
        await self.refresh_now()
        # Serve once the controller has told us the cluster (it sees our registration and
        # sends a full LeaderAndIsr and UpdateMetadata), so our first Metadata is current.
        if not await self.wait_for_cache(lambda: self.broker_id in self.snapshot.brokers,
                                         self.store.session_timeout):
            log.warning("no UpdateMetadata from a controller within %.0fs; serving anyway",
                        self.store.session_timeout)
        self._isr_task = asyncio.get_running_loop().create_task(self._isr_loop())
        self._hw_task = asyncio.get_running_loop().create_task(self._hw_checkpoint_loop())

    async def _register(self) -> None:
        b = self.broker
        endpoints = tuple(f"{name}://{host}:{port}" for name, (host, port)
                          in b.endpoints.items())
        info = z.BrokerInfo(self.broker_id, b.advertised_host, b.advertised_port,
                            b.config.get("broker.rack"), int(time.time() * 1000), endpoints,
                            tuple((name, b.listeners.protocol(name)) for name in b.endpoints))
        session = self.session.session_id
        try:
            self.broker_epoch = await self.store.register_broker(info)
        except BrokerIdInUse as e:
            raise ClusterError(str(e)) from None
        self._registered = True
        self._registered_session = session
        log.info("registered broker %d at %s:%d in ZooKeeper (broker epoch %d)",
                 self.broker_id, info.host, info.port, self.broker_epoch)

    async def controlled_shutdown(self) -> None:
        """Before the server stops (controlled.shutdown.enable): hand our leaderships over."""
        if self._registered and not self._closed and \
                self.broker.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown()

    async def close(self) -> None:
        self._closed = True
        if self._deadline is not None:
            self._deadline.cancel()
        if self.controller.active:
            self.controller.step_down("shutting down")
            await self.store.resign(self.broker_id)
        if self._refreshing is not None:
            self._refreshing.cancel()
        if self._isr_task is not None:
            self._isr_task.cancel()
        if self._hw_task is not None:
            self._hw_task.cancel()
        try:
            self.save_high_watermarks()
        except OSError as e:
            log.warning("could not save the high watermarks: %s", e)
        await self.fetchers.close()
        if self._controller_conn is not None:
            self._controller_conn.close()
        await self.entity_configs.close()
        await self.store.close()      # ends the session: our ephemeral nodes go at once

    async def _controlled_shutdown(self) -> None:
        """Stop following, then have the controller move our leaderships to other in-sync
        replicas and drop us from the ISRs (Kafka's ControlledShutdown), and apply the new
        states before the server stops: clients then get NOT_LEADER_OR_FOLLOWER from us and
        go to the new leaders instead of waiting on an election after we are gone."""
        cfg = self.broker.config
        attempts = max(1, int(cfg.get("controlled.shutdown.max.retries")))
        backoff = int(cfg.get("controlled.shutdown.retry.backoff.ms")) / 1000.0
        await self.fetchers.close()      # leaders may drop us from their ISRs
        if not set(self.snapshot.brokers) - {self.broker_id}:
            return                       # the last broker: nobody to hand anything to
        for attempt in range(1, attempts + 1):
            remaining = await self._ask_controller()
            if remaining is not None:
                # the controller's LeaderAndIsr makes us a follower of what we handed over
                keep = set(remaining)
                await self.wait_for_cache(lambda: not any(
                    p.is_leader and p.key not in keep
                    for p in self.broker.replica_manager.partitions.values()), 5.0)
                if not remaining:
                    log.info("controlled shutdown done: leaderships handed over")
                    return
                log.warning("controlled shutdown: still leading %s (no other in-sync "
                            "replica)", ", ".join(f"{t}-{p}" for t, p in remaining[:10]))
            if attempt < attempts:
                await asyncio.sleep(backoff)
        log.warning("controlled shutdown incomplete after %d attempt(s); stopping anyway",
                    attempts)

    async def _ask_controller(self) -> list | None:
        """The partitions still led after asking the controller, or None if it could not
        be asked."""
        from ...protocol import messages
        ctrl = self.snapshot.controller_id
        if ctrl == self.broker_id and self.controller.active:
            try:
                return await self.controller.controlled_shutdown(
                    self.controller.view, self.broker_id, self.broker_epoch)
            except KafkaError as e:
                log.warning("controlled shutdown: %s", e)
                return None
        endpoint = self._endpoint(ctrl)
        if endpoint is None:
            return None
        conn = self.broker_connection(endpoint, f"gregor-broker-{self.broker_id}",
                                      int(self.broker.config.get("replica.socket.timeout.ms"))
                                      / 1000)
        try:
            body = await conn.request(messages.api("ControlledShutdown"), 2,
                                      {"broker_id": self.broker_id,
                                       "broker_epoch": self.broker_epoch})
        except (OSError, asyncio.TimeoutError, ConnectionError, KafkaError) as e:
            log.warning("controlled shutdown: asking controller %d failed: %s", ctrl, e)
            return None
        finally:
            conn.close()
        if body["error_code"]:
            log.warning("controlled shutdown: controller %d answered %s", ctrl,
                        ErrorCode(body["error_code"]).name)
            return None
        return [(r["topic_name"], r["partition_index"]) for r in body["remaining_partitions"]]

    # -- following ZooKeeper ---------------------------------------------------------------

    async def refresh_now(self) -> ClusterSnapshot:
        """Read what a broker reads itself (controller, configs); as the controller (or when
        there is none) also the whole tree, and act on it."""
        # One read at a time: a slower, older read must never replace a newer view.
        async with self.controller.lock:
            view = await self.store.broker_view()
            self.refreshes += 1
            self.zk_controller = (view.controller_id, view.controller_epoch)
            self._apply_configs(view.configs)
            ctrl = self.controller
            if ctrl.active or view.controller_id in (-1, self.broker_id):
                await ctrl.on_snapshot(await self.store.snapshot())
            return self.snapshot

    def _apply_configs(self, configs: dict[str, dict[str, str]]) -> None:
        """AlterConfigs reach every broker through /config/topics/<t>, which each watches."""
        self.configs = configs
        apply_configs(self.snapshot, configs)
        b = self.broker
        for name, t in list(b.store.topics.items()):
            if name in configs and dict(t.configs) != configs[name]:
                b.apply_topic_configs(name, dict(configs[name]))

    async def alter_topic_configs(self, name: str, configs: dict[str, str | None],
                                  validate_only: bool) -> None:
        """AlterConfigs of a topic: validated, written to /config/topics/<t>, and answered
        once this broker's view has it (the others apply it from their watches)."""
        from ...protocol.errors import UnknownTopicOrPartitionError
        from ..config import checked_topic_configs
        view = self.snapshot.topics.get(name)
        if view is None or view.deleting:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        clean = checked_topic_configs(configs)
        if validate_only:
            return
        await self.store.set_topic_config(name, clean)
        await self.refresh_now()
        if self.configs.get(name) != clean:
            log.warning("topic %r: configs changed again meanwhile", name)

    async def add_partitions(self, topics: list[dict], validate_only: bool,
                             timeout_ms: int, quota=None) -> dict:
        """CreatePartitions on the controller: {name: error or None}, once our own view shows
        the new partitions (or the timeout passed). quota (controller_mutation_rate) counts
        each topic's new partitions and may refuse it."""
        out, added = {}, {}
        for t in topics:
            try:
                view = self.controller.view.topics.get(t["name"])
                if quota is not None and not validate_only and view is not None:
                    quota.record(t["count"] - len(view.assignment.partitions))
                await self.controller.add_partitions(self.controller.view, t["name"], t["count"],
                                                     t["assignments"], validate_only)
                out[t["name"]] = None
                if not validate_only:
                    added[t["name"]] = t["count"]
            except KafkaError as e:
                out[t["name"]] = e
        def shown(n, count):
            v = self.snapshot.topics.get(n)
            return v is not None and len(v.states) >= count
        await self._wait_told(lambda: all(shown(n, c) for n, c in added.items()), timeout_ms)
        return out

    async def delete_topics(self, names: list[str], timeout_ms: int, quota=None) -> dict:
        """DeleteTopics on the controller: {name: error or None}, once our own view no longer
        has the topics (or the timeout passed). quota (controller_mutation_rate) counts each
        topic's partitions and may refuse it."""
        refused = {}
        if quota is not None:
            for n in names:
                view = self.controller.view.topics.get(n)
                if view is not None and not view.deleting:
                    try:
                        quota.record(len(view.assignment.partitions))
                    except KafkaError as e:
                        refused[n] = e
        out = await self.controller.delete_topics(
            self.controller.view, [n for n in names if n not in refused])
        out.update(refused)
        marked = [n for n, e in out.items() if e is None]
        await self._wait_told(lambda: not any(n in self.snapshot.topics for n in marked),
                              timeout_ms)
        return out

    def _apply_state(self, part, state: z.PartitionState, replicas: list[int]) -> None:
        """Lead or follow as the partition state the controller sent says."""
        rm = self.broker.replica_manager
        if state.leader == self.broker_id:
            was_leader = part.is_leader
            if part.make_leader(state.leader_epoch, state.isr, replicas, state.zk_version,
                                int(time.time() * 1000)):
                self.fetchers.unfollow(part.key)
                log.info("%s-%d: leader at epoch %d (ISR %s, log end %d, HW %d)", part.topic,
                         part.index, state.leader_epoch, state.isr, part.log.log_end_offset,
                         part.high_watermark)
                if part.topic == GROUPS_TOPIC and self.broker.groups is not None:
                    self.broker.groups.became_leader(part.index, state.leader_epoch)
                elif part.topic == TXN_TOPIC and self.broker.txn is not None:
                    self.broker.txn.became_leader(part.index, state.leader_epoch)
                elif part.topic == SHARE_TOPIC and self.broker.share is not None:
                    self.broker.share.coordinator.became_leader(part.index,
                                                                state.leader_epoch)
            part.zk_state = state
            if was_leader:
                rm.notify(part)           # an ISR change may complete acks=all produces
            return
        was_leader = part.is_leader
        changed = part.make_follower(state.leader, state.leader_epoch, state.isr, replicas,
                                     state.zk_version)
        part.zk_state = state
        # always, not only when we led until now: a broker that stepped out was already made
        # a follower, and its coordinators must be unloaded whatever path got it here
        self._left_leadership(part)
        if was_leader:
            rm.notify(part)      # waiting fetches and produces answer (and now fail) at once
        if changed or self.fetchers.following(part.key) != state.leader:
            log.info("%s-%d: follower of broker %d at epoch %d (log end %d)", part.topic,
                     part.index, state.leader, state.leader_epoch, part.log.log_end_offset)
            self.fetchers.follow(part, state.leader, state.leader_epoch)

    def _left_leadership(self, part) -> None:
        """The coordinators' stopped-leading hooks (idempotent): LeaderAndIsr making the
        partition a follower, StopReplica, stepping out of the cluster."""
        if part.topic == GROUPS_TOPIC and self.broker.groups is not None:
            self.broker.groups.stopped_leading(part.index)
        elif part.topic == TXN_TOPIC and self.broker.txn is not None:
            self.broker.txn.stopped_leading(part.index)
        elif part.topic == SHARE_TOPIC and self.broker.share is not None:
            self.broker.share.coordinator.stopped_leading(part.index)

    async def _wait_told(self, ready, timeout_ms: int) -> None:
        """An admin change made as the controller: answer once our own cache shows it and
        every live broker has been told (Kafka answers on its own cache alone; a client
        asking another broker next would then still find the old state)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000.0
        if await self.wait_for_cache(ready, deadline - loop.time()):
            await self.controller.told(deadline - loop.time())

    def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where another broker is reached by brokers (inter.broker.listener.name); before
        UpdateMetadata names it, where LeaderAndIsr said the leader is."""
        info = self.snapshot.brokers.get(broker_id)
        if info is None:
            return self._leader_endpoints.get(broker_id)
        return info.endpoint(self.broker.listeners.inter_broker)

    # -- high watermarks on disk ----------------------------------------------------------

    def save_high_watermarks(self) -> None:
        """replication-offset-checkpoint: the high watermark of every replicated partition."""
        from . import hw_checkpoint
        rm = self.broker.replica_manager
        hws = {p.key: p.high_watermark for p in rm.partitions.values() if not p.deleted}
        hw_checkpoint.write(self.broker.data_dir, hws)

    async def _hw_checkpoint_loop(self) -> None:
        interval = int(self.broker.config.get("replica.high.watermark.checkpoint.interval.ms"))
        loop = asyncio.get_running_loop()
        while not self._closed:
            await asyncio.sleep(max(0.05, interval / 1000.0))
            try:
                # a small file, but fsynced: off the event loop
                rm = self.broker.replica_manager
                hws = {p.key: p.high_watermark for p in rm.partitions.values() if not p.deleted}
                from . import hw_checkpoint
                await loop.run_in_executor(None, hw_checkpoint.write, self.broker.data_dir, hws)
            except Exception:
                log.exception("saving the high watermarks failed")

    # -- what handlers ask -----------------------------------------------------------------

    def partition_error(self, topic: str, index: int) -> int:
        """The error for a produce/fetch of a partition this broker does not lead."""
        view = self.snapshot.topics.get(topic)
        if view is None or index not in view.assignment.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def maybe_auto_create(self, name: str) -> int:
        """Metadata asked for a missing topic: start creating it with the broker defaults
        (num.partitions, default.replication.factor); returns the error code to answer with."""
        cfg = self.broker.config
        if not cfg.get("auto.create.topics.enable") or name.startswith("__"):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if name in self._auto_creating:
            return ErrorCode.LEADER_NOT_AVAILABLE
        try:
            plan = assign_replicas(sorted(self.snapshot.brokers), int(cfg.get("num.partitions")),
                                   int(cfg.get("default.replication.factor")))
        except AssignmentError as e:
            log.warning("not auto-creating topic %r: %s", name, e)
            return ErrorCode.INVALID_REPLICATION_FACTOR
        self._auto_creating.add(name)
        asyncio.get_running_loop().create_task(self._auto_create(name, plan))
        return ErrorCode.LEADER_NOT_AVAILABLE

    async def _auto_create(self, name: str, plan: dict[int, list[int]]) -> None:
        try:
            if await self.store.create_assignment(
                    name, z.TopicAssignment(plan, new_uuid_string()), {}):
                log.info("auto-created topic %r: %s", name,
                         ", ".join(f"{p}->{r}" for p, r in sorted(plan.items())))
        except Exception as e:
            log.warning("auto-creating topic %r failed: %s", name, e)
        finally:
            self._auto_creating.discard(name)

    def ensure_internal_topic(self, name: str, partitions: int, configs: dict[str, str],
                              replication_factor: int) -> None:
        """Create an internal topic through ZooKeeper if the cluster has none yet (Kafka
        does this on the first FindCoordinator): assignment and configs here, partition
        states by the controller. The replication factor is capped to the live brokers."""
        if name in self.snapshot.topics or name in self._auto_creating:
            return
        live = sorted(self.snapshot.brokers)
        if not live:
            return
        try:
            plan = assign_replicas(live, partitions, min(replication_factor, len(live)))
        except AssignmentError as e:
            log.warning("not creating %s: %s", name, e)
            return
        self._auto_creating.add(name)
        asyncio.get_running_loop().create_task(self._create_internal(name, plan, configs))

    async def _create_internal(self, name, plan, configs) -> None:
        try:
            if await self.store.create_assignment(
                    name, z.TopicAssignment(plan, new_uuid_string()), dict(configs)):
                log.info("created internal topic %s: %d partitions, replication factor %d",
                         name, len(plan), len(plan[0]))
        except Exception as e:
            log.warning("creating internal topic %s failed: %s", name, e)
        finally:
            self._auto_creating.discard(name)

    def coordinator_for(self, topic: str, partition: int) -> tuple[int, z.BrokerInfo | None]:
        """(leader id, its registration) of an internal topic's partition, (-1, None) when
        the topic or its leader is not there yet."""
        view = self.snapshot.topics.get(topic)
        state = view.states.get(partition) if view is not None else None
        if state is None or state.leader < 0:
            return -1, None
        return state.leader, self.snapshot.brokers.get(state.leader)

    def topic_info(self, name: str) -> TopicInfo | None:
        """A topic as ZooKeeper describes it (configs from /config/topics), hosted here or
        not."""
        view = self.snapshot.topics.get(name)
        if view is None or view.deleting:
            return None
        return TopicInfo(name, z.topic_id_hex(view.assignment.topic_id),
                         len(view.assignment.partitions), dict(self.configs.get(name, {})))

    async def create_topics(self, topics: list[dict], validate_only: bool,
                            timeout_ms: int, quota=None) -> dict[str, KafkaError | None]:
        """CreateTopics on the controller; returns {name: error or None}. quota
        (controller_mutation_rate) counts each topic's partitions and may refuse it."""
        snap = self.controller.view
        out: dict[str, KafkaError | None] = {}
        created = []
        for t in topics:
            name = t["name"]
            try:
                configs = {c["name"]: c["value"] for c in t["configs"]}
                plan, clean = self.controller.plan_topic(
                    snap, name, t["num_partitions"], t["replication_factor"],
                    t["assignments"], configs)
                if not validate_only:
                    if quota is not None:
                        quota.record(len(plan))
                    await self.controller.create_topic(snap, name, plan, clean)
                    created.append(name)
                out[name] = None
            except KafkaError as e:
                out[name] = e
        if created:
            await self._wait_for_topics(created, timeout_ms)
        return out

    async def _wait_for_topics(self, names: list[str], timeout_ms: int) -> None:
        """Until our own view shows the new topics, so the Metadata that clients send next
        (often to this broker) already knows them."""
        await self._wait_told(lambda: all(n in self.snapshot.topics for n in names),
                              timeout_ms)
