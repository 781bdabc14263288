"""The broker: configuration, data directory, topics, partitions, handlers and the server.

`Broker(config)`; `await broker.start()` opens the data directory (recovering every partition
log), starts listening and returns the bound (host, port); `await broker.shutdown()` stops
accepting, lets in-flight requests finish, flushes and closes every log (each writes its
clean-shutdown marker).

Topic lifecycle lives here too (create, delete, add partitions, auto-create): with a single
node there is no controller to delegate to, and every admin handler shares these rules.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import time
from pathlib import Path
from typing import Any

from ..protocol.errors import (InvalidRequestError,
                               InvalidPartitionsError,
                               InvalidReplicaAssignmentError, InvalidReplicationFactorError,
                               InvalidTopicError, PolicyViolationError, TopicAlreadyExistsError,
                               TopicDeletionDisabledError, UnknownTopicOrPartitionError)
from . import apis
from .apis import api_versions
from .data_dir_lock import DataDirLock
from .config import BrokerConfig, checked_topic_configs, validate_topic_configs
from .listeners import ListenerConfig
from .metrics import BrokerMetrics
from .partition import Partition, log_config_for
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .security import enable as acl_setup
from .security.setup import build_security
from .server import Server
from .topics import TopicInfo, TopicStore, ensure_meta, topic_name_error

log = logging.getLogger("gregor.broker")

# One topic with a million partitions would exhaust file descriptors and memory long before
# it was useful; a single Python broker serves at most this many partitions per topic.
MAX_PARTITIONS_PER_TOPIC = 10_000
# Names Kafka reserves for its internal topics; clients may read them but not create them here.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def partition_budget(config: BrokerConfig) -> int:
    """gregor.max.partitions, or what the open-file limit allows: ~3 descriptors per partition
    (segment, offset and time index) plus a rolled segment's, after the connections and a
    reserve for everything else."""
    explicit = int(config.get("gregor.max.partitions"))
    if explicit > 0:
        return explicit
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    except (ImportError, ValueError, OSError):
        return 10_000
    if soft == resource.RLIM_INFINITY:
        return 100_000
    return max(100, (soft - int(config.get("max.connections")) - 256) // 4)


def _budget(value) -> int:
    v = int(value)
    return (1 << 62) if v < 0 else v     # -1: unbounded, as in Kafka


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.data_dir = Path(config.data_dir)
        self.dir_lock = DataDirLock(self.data_dir)     # Kafka's .lock (data_dir_lock.py)
        self.metrics = BrokerMetrics()
        self.replica_manager = ReplicaManager(
            self.broker_id, fsync_acks_all=bool(config.get("gregor.fsync.acks.all")))
        self.store = TopicStore(self.data_dir)
        self.producer_ids: ProducerIdManager | None = None
        self.cluster_id = ""
        self.handlers: dict = {}
        self.api_version_table: list[dict] = []
        self.server: Server | None = None
        self.host = ""
        self.port = 0
        self.advertised_host = ""
        self.advertised_port = 0
        self.listeners = ListenerConfig.from_config(config)
        self.endpoints: dict[str, tuple[str, int]] = {}     # listener -> advertised address
        self.bound: dict[str, tuple[str, int]] = {}         # listener -> address listened on
        self.metrics_port: int | None = None
        self._tasks: list[asyncio.Task] = []
        self._shutdown_started = False
        self.max_partitions = partition_budget(config)
        self.txn = None                  # the transaction coordinator service (txn/service.py)
        self.groups = None               # the group coordinator service (group/service.py)
        self.share = None                # share groups (share/service.py)
        # Cluster mode (zookeeper.connect set): membership, metadata cache, controller.
        self.cluster = None
        self._saved_hws: dict = {}       # cluster mode: replication-offset-checkpoint
        self.cleaner = None              # the log cleaner (gregor/log/cleaner/manager.py)
        self.entity_configs = None       # user/client/ip configs: quotas, SCRAM credentials
        self.quotas = None               # client quotas (gregor/broker/quotas/service.py)
        self.security = None             # TLS / SASL per listener, SCRAM credentials
        # the coordinators' clock: None is real time; gregor.testing sets a ManualClock
        self.clock = None
        self.authorizer = None           # ACL decisions, None: no authorizer (security/enable.py)
        self.acl_service = None

    # -- start / stop -----------------------------------------------------------------------

    def open(self) -> None:
        """Open the data directory and every partition log (synchronous; runs before the
        server accepts connections)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = ensure_meta(self.data_dir, self.broker_id, self.config.get("cluster.id"))
        # In a cluster, ids come from ZooKeeper blocks so they are unique cluster-wide.
        self.producer_ids = self.cluster.producer_ids if self.cluster is not None \
            else ProducerIdManager(self.data_dir)
        self.store.load()
        self._open_entity_configs()
        if self.cluster is not None:
            from .cluster import hw_checkpoint
            self._saved_hws = hw_checkpoint.read(self.data_dir)
        for t in list(self.store.topics.values()):
            if t.deleting:
                log.info("finishing the deletion of topic %r", t.name)
                self._delete_partition_dirs(t.name)
                self.store.remove(t.name)
                continue
            cfg = self.topic_config(t)
            for i in range(t.partitions):
                self._open_partition(t.name, i, cfg)
        total = len(self.replica_manager.partitions)
        log.info("opened %d topic(s), %d partition(s) in %s", len(self.store.live()), total,
                 self.data_dir)
        from .txn.service import TxnService
        self.txn = TxnService(self)
        self.txn.load_existing()
        from .group.service import GroupService
        self.groups = GroupService(self)
        from .share.service import ShareService
        self.share = ShareService(self)
        acl_setup.open_authorizer(self)

    def _open_entity_configs(self) -> None:
        """The store quotas and credentials share: the data directory's file on a single
        node, ZooKeeper's /config znodes in a cluster (opened when it joined)."""
        from .quotas.service import QuotaService
        self.quotas = QuotaService(self.config)       # checks the quota window settings
        if self.cluster is not None:
            self.entity_configs = self.cluster.entity_configs
            return
        from .entity_configs.file_store import FileEntityConfigStore
        self.entity_configs = FileEntityConfigStore(self.data_dir).load()

    def endpoint(self, listener: str | None = None) -> tuple[str, int]:
        """Where this broker is reached on a listener (the first one when None or unknown)."""
        found = self.endpoints.get(listener) if listener else None
        return found or (self.advertised_host, self.advertised_port)

    async def start(self, metrics_port: int | None = None) -> tuple[str, int]:
        # First of all, as Kafka's LogManager: a second broker on this directory stops here,
        # before it registers in ZooKeeper or opens a segment.
        self.dir_lock.acquire()
        try:
            return await self._start(metrics_port)
        except BaseException:
            if not self._shutdown_started:
                self.dir_lock.release()
            raise

    async def _start(self, metrics_port: int | None) -> tuple[str, int]:
        if self.config.get("zookeeper.connect"):
            from .cluster.member import ClusterMember
            self.cluster = ClusterMember(self)
            try:
                await self.cluster.connect()
            except BaseException:
                await self.cluster.store.close()
                raise
        self.open()
        await acl_setup.start_authorizer(self)
        self.handlers = apis.build_handlers(self)
        self.api_version_table = apis.version_table(self.handlers)
        self.security = build_security(self)
        cfg = self.config
        self.server = Server(
            self.handlers, self.metrics,
            max_request_bytes=int(cfg.get("socket.request.max.bytes")),
            max_connections=int(cfg.get("max.connections")),
            max_in_flight=int(cfg.get("queued.max.requests")),
            max_buffered_bytes=_budget(cfg.get("queued.max.request.bytes")),
            idle_timeout_s=int(cfg.get("connections.max.idle.ms")) / 1000.0,
            unsupported_version_response=lambda: api_versions.unsupported_version_body(self),
            socket_send_buffer=int(cfg.get("socket.send.buffer.bytes")),
            socket_receive_buffer=int(cfg.get("socket.receive.buffer.bytes")))
        self.server.security = self.security
        self.server.connection_lost_hooks.append(self.share.connection_lost)
        bound = {}
        for lst in self.listeners.listeners:
            bound[lst.name] = await self.server.start(lst.host or "127.0.0.1", lst.port,
                                                      lst.name, self.security.ssl_context(lst.name))
            log.info("listener %s (%s) on %s:%d", lst.name, self.security.protocol(lst.name),
                     *bound[lst.name])
        self.bound = bound
        self.host, self.port = bound[self.listeners.listeners[0].name]
        self.endpoints = {lst.name: (lst.host, lst.port)
                          for lst in self.listeners.advertise(bound, socket.gethostname())}
        self.advertised_host, self.advertised_port = \
            self.endpoints.get(self.listeners.listeners[0].name) or \
            next(iter(self.endpoints.values()))
        self._start_quotas()
        self.metrics.watch_purgatories(self.replica_manager.purgatories)
        self.metrics.watch_partitions(lambda: list(self.replica_manager.partitions.values()))
        if metrics_port is not None:
            self.metrics_port = self.metrics.serve(metrics_port)
            log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_port)
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._retention_loop()))
        self._start_cleaner(loop)
        self.groups.load_existing()      # on the loop: loaded members' session timers start
        self.groups.start_timers()
        self.share.load_existing()
        self.txn.start_timers()
        if self.cluster is not None:
            try:
                await self.cluster.join()
            except BaseException:
                await self.shutdown()      # never serve unregistered
                raise
        return self.host, self.port

    async def shutdown(self) -> None:
        """Stop accepting, finish in-flight requests, flush and close every log."""
        if self._shutdown_started:
            return
        self._shutdown_started = True
        if self.cluster is not None:
            # First, while still serving (as Kafka does): the controller moves our
            # leaderships away and tells us so by LeaderAndIsr, which must reach us.
            try:
                await self.cluster.controlled_shutdown()
            except Exception:
                log.exception("controlled shutdown failed; stopping anyway")
        log.info("shutting down: no new requests; finishing in-flight ones")
        if self.server is not None:
            self.server.stop_accepting()
        await acl_setup.stop_authorizer(self)
        if self.cluster is not None:
            try:
                await self.cluster.close()
            except Exception:
                log.exception("leaving the cluster failed; ZooKeeper expires our session")
        rm = self.replica_manager
        await rm.wait_for_flush()
        rm.flush_all()                      # commits what was appended: acks=all complete
        rm.fetch_purgatory.complete_all()   # long polls answer with what they have
        rm.produce_purgatory.complete_all()
        if self.server is not None:
            timeout = int(self.config.get("gregor.shutdown.timeout.ms")) / 1000.0
            if not await self.server.drain(timeout):
                log.warning("some responses were still pending after %.1fs; closing anyway",
                            timeout)
            await self.server.close()
        for t in self._tasks:
            t.cancel()
        if self.cleaner is not None:        # a pass in progress swaps through this loop
            await asyncio.get_running_loop().run_in_executor(None, self.cleaner.stop)
        if self.txn is not None:
            self.txn.close()
        if self.groups is not None:
            self.groups.close()
        if self.share is not None:
            self.share.close()
        if self.quotas is not None:
            self.quotas.close()
        if self.entity_configs is not None and self.cluster is None:
            await self.entity_configs.close()
        if self.security is not None:
            self.security.close()
        await rm.wait_for_flush()
        rm.flush_all()
        rm.close_all()
        self.metrics.close()
        self.dir_lock.release()
        log.info("shutdown complete; logs flushed and closed cleanly")

    def _start_quotas(self) -> None:
        from .quotas.metrics import QuotaCollector
        self.quotas.start(self.entity_configs, self.server)
        self.metrics.registry.register(QuotaCollector(self.quotas))
        if hasattr(self.entity_configs, "start_polling"):
            self.entity_configs.start_polling()      # changes made by offline commands

    def _start_cleaner(self, loop) -> None:
        if not self.config.get("log.cleaner.enable"):
            return
        from ..log.cleaner.manager import CleanerCollector, LogCleanerManager

        async def call(fn):
            return fn()

        def on_loop(fn):
            fut = asyncio.run_coroutine_threadsafe(call(fn), loop)
            while True:      # never wait forever on a loop that is shutting down
                try:
                    return fut.result(timeout=1.0)
                except TimeoutError:
                    if self.cleaner.stopping or loop.is_closed():
                        fut.cancel()
                        raise RuntimeError("broker is stopping") from None

        cfg = self.config
        self.cleaner = LogCleanerManager(
            self.data_dir, lambda: list(self.replica_manager.partitions.values()), on_loop,
            threads=int(cfg.get("log.cleaner.threads")),
            dedupe_buffer_size=int(cfg.get("log.cleaner.dedupe.buffer.size")),
            io_max_bytes_per_second=float(cfg.get("log.cleaner.io.max.bytes.per.second")),
            backoff_ms=int(cfg.get("log.cleaner.backoff.ms")),
            use_processes=bool(cfg.get("gregor.log.cleaner.process")))
        self.metrics.registry.register(CleanerCollector(self.cleaner))
        self.cleaner.start()

    async def _retention_loop(self) -> None:
        interval = max(0.1, int(self.config.get("log.retention.check.interval.ms")) / 1000.0)
        while True:
            await asyncio.sleep(interval)
            self.apply_retention()

    def apply_retention(self, now_ms: int | None = None) -> int:
        """One retention pass over every partition (never past its high watermark); returns
        the number of segments deleted."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        deleted = 0
        for p in list(self.replica_manager.partitions.values()):
            try:
                n = p.log.apply_retention(now, high_watermark=p.high_watermark)
            except Exception:
                log.exception("retention of %s-%d failed", p.topic, p.index)
                continue
            if n:
                deleted += n
                p.reset_after_truncation()
                self.replica_manager.notify(p)    # long polls below the new start answer
        return deleted

    @property
    def txn_coordinator(self):
        """The transaction coordinator, with `__transaction_state` created on first use."""
        if self.txn is None:
            return None
        self.txn.ensure()
        return self.txn.coordinator

    @property
    def group_coordinator(self):
        """The group coordinator, with `__consumer_offsets` created on first use."""
        if self.groups is None:
            return None
        self.groups.ensure()
        return self.groups.coordinator

    # -- topics -----------------------------------------------------------------------------

    def topic_config(self, topic: TopicInfo | str) -> dict[str, Any]:
        """Every topic setting: the topic's own values over the broker's defaults."""
        t = self.store.get(topic) if isinstance(topic, str) else topic
        cfg = self.config.topic_defaults()
        if t is not None:
            cfg.update(validate_topic_configs(t.configs))
        return cfg

    def partition_dir(self, topic: str, index: int) -> Path:
        return self.data_dir / f"{topic}-{index}"

    def _open_partition(self, topic: str, index: int, cfg: dict[str, Any]) -> Partition:
        from ..log import Log
        log_ = Log.open(self.partition_dir(topic, index), log_config_for(cfg))
        p = Partition(topic, index, log_, cfg, self.broker_id)
        if self.cluster is not None:
            p.is_leader = False       # until the controller says so (LeaderAndIsr)
            saved = self._saved_hws.pop((topic, index), None)
            if saved is not None:
                p.high_watermark = max(log_.log_start_offset, min(saved, log_.log_end_offset))
                if p.high_watermark < log_.log_end_offset:
                    # so that long polls wake when the HW passes the saved one
                    p._uncommitted.append((log_.log_end_offset, 1))
        self.replica_manager.add(p)
        return p

    def check_new_topic(self, name: str, partitions: int, replication_factor: int,
                        configs: dict[str, str | None],
                        assignments: list | None = None) -> tuple[int, dict[str, str]]:
        """Validate a CreateTopics entry; returns (partitions, configs). Raises KafkaError."""
        problem = topic_name_error(name)
        if problem:
            raise InvalidTopicError(problem)
        if name in INTERNAL_TOPICS:
            raise InvalidTopicError(f"{name!r} is an internal topic name")
        if self.store.get(name) is not None:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        if assignments:
            for a in assignments:
                ids = a.get("broker_ids") or []
                if not ids or any(b != self.broker_id for b in ids) or len(set(ids)) != len(ids):
                    raise InvalidReplicaAssignmentError(
                        f"replica assignment {ids} for partition {a.get('partition_index')} "
                        f"names brokers other than the only one, {self.broker_id}")
            partitions = len(assignments)
            replication_factor = 1
        if partitions == -1:
            partitions = int(self.config.get("num.partitions"))
        if replication_factor == -1:
            replication_factor = int(self.config.get("default.replication.factor"))
        if partitions <= 0:
            raise InvalidPartitionsError(f"number of partitions must be at least 1, got "
                                         f"{partitions}")
        if partitions > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidPartitionsError(f"{partitions} partitions is more than this broker "
                                         f"serves per topic ({MAX_PARTITIONS_PER_TOPIC})")
        if replication_factor <= 0:
            raise InvalidReplicationFactorError(
                f"replication factor must be at least 1, got {replication_factor}")
        if replication_factor > 1:
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is larger than the number of "
                "available brokers (1); use replication factor 1")
        clean = checked_topic_configs(configs)
        self._check_partition_budget(partitions)
        return partitions, clean

    def _check_partition_budget(self, new: int) -> None:
        have = len(self.replica_manager.partitions)
        if have + new > self.max_partitions:
            raise PolicyViolationError(
                f"this broker hosts {have} partitions and serves at most {self.max_partitions} "
                "(gregor.max.partitions, derived from the open-file limit); delete topics or "
                "raise the limit (ulimit -n, --set gregor.max.partitions=N)")

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> TopicInfo:
        """Create an already validated topic and open its partitions.

        Crash consistency (an acknowledged CreateTopics survives kill -9 and a power cut):
        the topic list is the commit point. store.add writes it to a temporary file, fsyncs
        it, renames it over the old list and fsyncs the data directory: two fsyncs, and the
        topic, its partition count and configs are durable before this returns. Only then
        are the partition directories made, with fsyncs of none of them: each holds one
        empty segment and checkpoint files that recovery rebuilds, so a power cut that takes
        a directory, a file or a file's contents leaves what opening it again recreates (an
        empty log at offset 0; tests/log/test_log_creation_durability.py). The names start to
        matter with the first data promised in them: a log's first fsync round (an acks=all
        produce's group commit, a roll, the close) fsyncs its directory and the data
        directory with the data (Log._ticket). The order also keeps a partition directory
        from being durable while the list that names it is not: recovery would adopt such a
        directory as a topic with default configs, so a CreateTopics that never answered
        could come back with other settings than the ones asked for. kill -9 alone loses
        nothing written before the answer (the page cache survives the process)."""
        t = self.store.add(name, partitions, configs)
        cfg = self.topic_config(t)
        for i in range(partitions):
            self._open_partition(name, i, cfg)
        log.info("created topic %r with %d partition(s)%s", name, partitions,
                 f" and configs {configs}" if configs else "")
        return t

    def maybe_auto_create(self, name: str) -> TopicInfo | None:
        """Create topic `name` with the broker defaults if auto-creation is on and the name is
        legal; returns the topic or None."""
        t = self.store.get(name)
        if t is not None:
            return t
        if not self.config.get("auto.create.topics.enable") or self.cluster is not None:
            return None                  # in a cluster: Metadata auto-creates via ZooKeeper
        if topic_name_error(name) or name in INTERNAL_TOPICS:
            return None
        n = int(self.config.get("num.partitions"))
        try:
            self._check_partition_budget(n)
        except PolicyViolationError as e:
            log.warning("not auto-creating topic %r: %s", name, e.message)
            return None
        return self.create_topic(name, n, {})

    def _single_node_only(self, what: str) -> None:
        if self.cluster is not None:
            raise InvalidRequestError(f"{what} is not supported by gregor's cluster mode yet "
                                      "(it needs the controller to stop and move replicas)")

    def delete_topic(self, name: str) -> None:
        self._single_node_only("deleting topics")
        if not self.config.get("delete.topic.enable"):
            raise TopicDeletionDisabledError(
                "topic deletion is disabled on this broker (delete.topic.enable=false)")
        t = self.store.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        self.delete_local_topic(name)

    def delete_local_topic(self, name: str) -> None:
        """Remove this broker's partitions of a topic and their data (a single node's
        DeleteTopics; in a cluster, once ZooKeeper no longer has the topic)."""
        self.store.mark_deleting(name)
        for p in self.replica_manager.topic_partitions(name):
            self.replica_manager.remove(p.key)
            try:
                p.log.delete()
            except Exception:
                log.exception("deleting the log of %s-%d failed; removing its directory",
                              name, p.index)
        self._delete_partition_dirs(name)
        self.store.remove(name)
        log.info("deleted topic %r", name)

    def _delete_partition_dirs(self, name: str) -> None:
        import shutil
        for entry in self.data_dir.glob(f"{name}-*"):
            suffix = entry.name[len(name) + 1:]
            if suffix.isdigit() and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)

    def add_partitions(self, name: str, total: int, validate_only: bool = False) -> None:
        self._single_node_only("adding partitions")
        t = self.store.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if total <= t.partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {t.partitions} partitions; the new count {total} must be "
                "larger (partitions cannot be removed)")
        if total > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidPartitionsError(f"{total} partitions is more than this broker serves "
                                         f"per topic ({MAX_PARTITIONS_PER_TOPIC})")
        self._check_partition_budget(total - t.partitions)
        if validate_only:
            return
        cfg = self.topic_config(t)
        for i in range(t.partitions, total):
            self._open_partition(name, i, cfg)
        self.store.set_partitions(name, total)
        log.info("topic %r now has %d partitions", name, total)

    def alter_topic_configs(self, name: str, configs: dict[str, str | None],
                            validate_only: bool = False) -> None:
        """Replace the topic's own settings with `configs` (AlterConfigs semantics: settings
        not listed go back to the broker defaults) and apply them to its partitions."""
        self._single_node_only("changing topic configs")
        t = self.store.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        clean = checked_topic_configs(configs)
        if validate_only:
            return
        self.apply_topic_configs(name, clean)

    def apply_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Store the topic's own settings and apply them to its partitions here (a single
        node's AlterConfigs; in a cluster, when /config/topics/<t> changes)."""
        self.store.set_configs(name, configs)
        cfg = self.topic_config(name)
        log_cfg = log_config_for(cfg)
        for p in self.replica_manager.topic_partitions(name):
            p.update_config(cfg)
            p.log.config = log_cfg
        log.info("topic %r configs are now %s", name, configs or "the broker defaults")
