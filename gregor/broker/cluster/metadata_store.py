"""The metadata store: the one module that talks to ZooKeeper (through kazoo).

Everything else in cluster mode speaks to `MetadataStore` in terms of znodes.py's types, so a
KRaft-style quorum could replace ZooKeeper behind the same methods.

kazoo runs its own connection thread; every call here uses kazoo's *_async form and hands the
result to the asyncio loop (call_soon_threadsafe), so the broker's loop never blocks on
ZooKeeper. Watch events and session-state changes arrive the same way, as plain callbacks on
the loop: `on_change()` (something watched changed: re-read) and `on_session(state, session_id)`
with "CONNECTED", "SUSPENDED" or "LOST" and the id of the session the report is about, in
kazoo's order (session.py decides what each means, on the loop).

Writes made by the controller are multi-ops that first check /controller_epoch's zkVersion
(Kafka's fencing): a controller that lost its role can no longer change anything, even if it
has not noticed yet.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry
from kazoo.exceptions import (BadVersionError, ConnectionClosedError, ConnectionLoss,
                              NodeExistsError, NoNodeError, NotEmptyError, RolledBackError,
                              SessionExpiredError, ZookeeperError)

from . import znodes as z
from .zk_security import NONE as ZK_OPEN

log = logging.getLogger("gregor.broker.cluster.store")


class StoreError(Exception):
    pass


class BrokerIdInUse(StoreError):
    pass


class ControllerMoved(StoreError):
    """A conditional controller write failed: /controller_epoch changed under us."""


class Conflict(StoreError):
    """A conditional write lost a race (a state's zkVersion moved, a node already exists);
    the watch brings the newer state, so callers simply re-read."""


class AlreadyExists(StoreError):
    pass


class Disconnected(StoreError):
    """ZooKeeper could not be asked: the connection or the session was lost meanwhile. The
    session's own events (on_session) say what happens next; callers give up this attempt."""


_DISCONNECTED = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)


def split_connect(connect: str) -> tuple[str, str]:
    """'h1:2181,h2:2181/gregor/x' -> ('h1:2181,h2:2181', '/gregor/x') (chroot may be '')."""
    hosts, slash, chroot = connect.partition("/")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    if not hosts:
        raise ValueError(f"zookeeper.connect {connect!r} names no server")
    return hosts, chroot


@dataclass
class ClusterSnapshot:
    """What ZooKeeper said at one refresh."""
    brokers: dict[int, z.BrokerInfo] = field(default_factory=dict)
    controller_id: int = -1
    controller_epoch: int = 0
    topics: dict[str, z.TopicView] = field(default_factory=dict)
    # each live broker's epoch: the czxid of its /brokers/ids/<id> (KIP-380), new with
    # every registration, so a broker that came back under a new session is told again
    broker_epochs: dict[int, int] = field(default_factory=dict)


@dataclass
class BrokerView:
    """What a broker reads from ZooKeeper itself."""
    controller_id: int = -1
    controller_epoch: int = 0
    configs: dict[str, dict[str, str]] = field(default_factory=dict)


class MetadataStore:
    def __init__(self, connect: str, *, session_timeout_ms: int = 18000,
                 connection_timeout_ms: int | None = None, security=None):
        self.hosts, self.chroot = split_connect(connect)
        # ZooKeeper login and znode ACLs (zk_security.py; zookeeper.set.acl)
        self.security = security if security is not None else ZK_OPEN
        self.session_timeout = session_timeout_ms / 1000.0
        self.connection_timeout = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self.client: KazooClient | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.on_change = lambda: None
        self.on_session = lambda state, session_id: None
        self._closed = False

    # -- connection ------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, create the chroot when missing, then work inside it."""
        self.loop = asyncio.get_running_loop()
        # kazoo's default reconnect backoff grows to an hour; a broker must be back within
        # about a second of ZooKeeper being reachable again, so cap it there, retry forever.
        retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
        client = self.security.client(self.hosts, timeout=self.session_timeout,
                                      connection_retry=retry)
        self.client = client
        try:
            await self.loop.run_in_executor(None, lambda: client.start(self.connection_timeout))
        except Exception as e:
            raise StoreError(f"could not connect to ZooKeeper at {self.hosts} within "
                             f"{self.connection_timeout:.0f}s "
                             f"(zookeeper.connection.timeout.ms): {e}") from None
        if self.chroot:
            await self._wait(client.ensure_path_async(self.chroot))
            client.chroot = self.chroot
        client.add_listener(self._state_listener)
        for path in z.PERSISTENT_PATHS:
            await self._wait(client.ensure_path_async(path))

    async def close(self) -> None:
        self._closed = True
        if self.client is not None:
            client = self.client
            await asyncio.get_running_loop().run_in_executor(None, _stop, client)

    def _state_listener(self, state) -> None:       # kazoo's thread
        name = {KazooState.CONNECTED: "CONNECTED", KazooState.SUSPENDED: "SUSPENDED",
                KazooState.LOST: "LOST"}.get(state, str(state))
        # The session the report is about, read here on kazoo's thread where it is still
        # that session's: kazoo calls listeners before it forgets an expired session's id
        # and after it took a new session's (client_id hides it while disconnected).
        session_id = getattr(self.client, "_session_id", None)
        if not self._closed:
            # call_soon_threadsafe keeps kazoo's order: the loop sees the reports as kazoo
            # made them, one at a time
            self.loop.call_soon_threadsafe(self.on_session, name, session_id)

    def _watch(self, event) -> None:                  # kazoo's thread
        if not self._closed:
            self.loop.call_soon_threadsafe(self.on_change)

    def _wait(self, async_result) -> asyncio.Future:
        """An asyncio future for a kazoo IAsyncResult."""
        fut = self.loop.create_future()

        def done(r):
            def settle():
                if fut.done():
                    return
                try:
                    fut.set_result(r.get_nowait())
                except _DISCONNECTED as e:
                    fut.set_exception(Disconnected(f"ZooKeeper: {type(e).__name__}"))
                except Exception as e:
                    fut.set_exception(e)
            self.loop.call_soon_threadsafe(settle)
        async_result.rawlink(done)
        # snapshot() starts many reads before awaiting them; when one fails (connection
        # lost) the others' errors are expected, not "never retrieved" noise.
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        return fut

    @property
    def connected(self) -> bool:
        return self.client is not None and self.client.connected

    @property
    def session_id(self) -> int | None:
        sid = self.client.client_id if self.client is not None else None
        return sid[0] if sid else None

    # -- cluster id, brokers ---------------------------------------------------------------

    async def cluster_id(self, candidate: str) -> str:
        """The cluster's id, created as `candidate` by the first broker."""
        try:
            await self._wait(self.client.create_async(z.CLUSTER_ID, z.encode_cluster_id(
                candidate), makepath=True))
            return candidate
        except NodeExistsError:
            data, _ = await self._wait(self.client.get_async(z.CLUSTER_ID))
            return z.decode_cluster_id(data)

    async def register_broker(self, info: z.BrokerInfo) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (its czxid)."""
        path = z.broker_path(info.broker_id)
        try:
            await self._wait(self.client.create_async(path, info.encode(), ephemeral=True))
            _, stat = await self._wait(self.client.get_async(path))
            return stat.czxid
        except NodeExistsError:
            pass
        # Our own node from a previous connection of this same session is fine; another
        # session's is another live broker (or a crashed one whose session has not expired).
        try:
            _, stat = await self._wait(self.client.get_async(path))
        except NoNodeError:
            return await self.register_broker(info)
        if stat.ephemeralOwner == self.session_id:
            await self._wait(self.client.set_async(path, info.encode()))
            return stat.czxid
        raise BrokerIdInUse(
            f"broker.id {info.broker_id} is already registered in ZooKeeper at {path} by "
            f"another session (a running broker, or one that died less than "
            f"zookeeper.session.timeout.ms ago); give this broker another --broker-id")

    # -- controller ------------------------------------------------------------------------

    async def try_become_controller(self, broker_id: int, now_ms: int) -> tuple[int, int] | None:
        """Create ephemeral /controller and bump /controller_epoch in one multi-op; returns
        (epoch, /controller_epoch zkVersion) or None when another broker is controller."""
        c = self.client
        while True:
            try:
                data, stat = await self._wait(c.get_async(z.CONTROLLER_EPOCH))
                epoch, version = z.decode_epoch(data), stat.version
            except NoNodeError:
                try:
                    await self._wait(c.create_async(
                        z.CONTROLLER_EPOCH, z.encode_epoch(z.INITIAL_CONTROLLER_EPOCH)))
                except NodeExistsError:
                    pass
                continue
            tx = c.transaction()
            tx.create(z.CONTROLLER, z.encode_controller(broker_id, now_ms), ephemeral=True)
            tx.set_data(z.CONTROLLER_EPOCH, z.encode_epoch(epoch + 1), version=version)
            results = await self._wait(tx.commit_async())
            if isinstance(results[0], NodeExistsError):
                return None
            if isinstance(results[1], BadVersionError):
                continue                 # a racing controller bumped it; try again
            _raise_first(results)
            return epoch + 1, version + 1

    async def resign(self, broker_id: int) -> None:
        """Delete /controller if it is still ours (clean controller hand-over)."""
        try:
            data, stat = await self._wait(self.client.get_async(z.CONTROLLER))
            if z.decode_controller(data) == broker_id and \
                    stat.ephemeralOwner == self.session_id:
                await self._wait(self.client.delete_async(z.CONTROLLER, version=stat.version))
        except (NoNodeError, BadVersionError):
            pass

    # -- reading the cluster (and watching it) --------------------------------------------

    async def snapshot(self) -> ClusterSnapshot:
        """Read brokers, controller and every topic, leaving a watch on each node read, so
        any later change calls on_change()."""
        c, w, snap = self.client, self._watch, ClusterSnapshot()
        ids = await self._wait(c.get_children_async(z.BROKER_IDS, watch=w))
        topics = await self._wait(c.get_children_async(z.TOPICS, watch=w))
        deleting = set(await self._wait(c.get_children_async(z.DELETE_TOPICS, watch=w)))
        ctrl = await self._wait(c.exists_async(z.CONTROLLER, watch=w))
        broker_reads = {int(i): self._wait(c.get_async(z.broker_path(int(i)), watch=w))
                        for i in ids if i.isdigit()}
        topic_reads = {t: self._wait(c.get_async(z.topic_path(t), watch=w)) for t in topics}
        config_reads = {t: self._wait(c.get_async(z.topic_config_path(t), watch=w))
                        for t in topics}
        epoch_read = self._wait(c.get_async(z.CONTROLLER_EPOCH))
        ctrl_read = self._wait(c.get_async(z.CONTROLLER, watch=w)) if ctrl else None
        for bid, fut in broker_reads.items():
            data, stat = await _or_none(fut)
            if data:
                snap.brokers[bid] = z.BrokerInfo.decode(bid, data)
                snap.broker_epochs[bid] = stat.czxid
        if ctrl_read is not None:
            data, _ = await _or_none(ctrl_read)
            snap.controller_id = z.decode_controller(data) if data else -1
        data, _ = await _or_none(epoch_read)
        snap.controller_epoch = z.decode_epoch(data) if data else 0
        state_reads = {}
        for name, fut in topic_reads.items():
            data, _ = await _or_none(fut)
            if not data:
                continue
            assignment = z.TopicAssignment.decode(data)
            cdata, _ = await _or_none(config_reads[name])
            view = z.TopicView(name, assignment, configs=z.decode_topic_config(cdata),
                               deleting=name in deleting)
            snap.topics[name] = view
            for p in assignment.partitions:
                state_reads[(name, p)] = self._wait(c.get_async(z.state_path(name, p), watch=w))
        missing = []
        for (name, p), fut in state_reads.items():
            data, stat = await _or_none(fut)
            if data:
                snap.topics[name].states[p] = z.PartitionState.decode(data, stat.version)
            else:
                missing.append(z.state_path(name, p))
        # A read of a missing node leaves no watch; an exists() does, and fires on creation
        # (an auto-created topic's states, written later by the controller).
        for path in missing:
            if await self._wait(c.exists_async(path, watch=w)) is not None:
                self.loop.call_soon(self.on_change)
        return snap

    async def broker_view(self) -> BrokerView:
        """What every broker reads itself (the rest it is told by the controller): who the
        controller is, and the topics' configs, watched (Kafka's brokers watch /controller
        to run for it and follow config changes themselves)."""
        c, w = self.client, self._watch
        ctrl = await self._wait(c.exists_async(z.CONTROLLER, watch=w))
        ctrl_read = self._wait(c.get_async(z.CONTROLLER, watch=w)) if ctrl else None
        epoch_read = self._wait(c.get_async(z.CONTROLLER_EPOCH))
        names = await self._wait(c.get_children_async(z.CONFIG_TOPICS, watch=w))
        reads = {t: self._wait(c.get_async(z.topic_config_path(t), watch=w)) for t in names}
        view = BrokerView()
        if ctrl_read is not None:
            data, _ = await _or_none(ctrl_read)
            view.controller_id = z.decode_controller(data) if data else -1
        data, _ = await _or_none(epoch_read)
        view.controller_epoch = z.decode_epoch(data) if data else 0
        for name, fut in reads.items():
            data, _ = await _or_none(fut)
            if data is not None:
                view.configs[name] = z.decode_topic_config(data)
        return view

    async def topic_config(self, name: str) -> dict[str, str]:
        """One topic's configs, watched (a broker about to open a topic it was just given)."""
        data, _ = await _or_none(self._wait(self.client.get_async(
            z.topic_config_path(name), watch=self._watch)))
        return z.decode_topic_config(data)

    async def create_assignment(self, name: str, assignment: z.TopicAssignment,
                                configs: dict[str, str]) -> bool:
        """Configs and assignment only, unfenced: what any broker writes to auto-create a topic
        (Kafka's AdminZkClient); the controller then writes the partition states. False when
        the topic already exists."""
        tx = self.client.transaction()
        tx.create(z.topic_config_path(name), z.encode_topic_config(configs))
        tx.create(z.topic_path(name), assignment.encode())
        results = await self._wait(tx.commit_async())
        if any(isinstance(r, NodeExistsError) for r in results):
            return False
        _raise_first(results)
        return True

    # -- controller writes (fenced by /controller_epoch's zkVersion) -----------------------

    async def create_topic(self, name: str, assignment: z.TopicAssignment,
                           states: dict[int, z.PartitionState], configs: dict[str, str],
                           epoch_zk_version: int) -> None:
        """Configs, assignment and every initial partition state in one multi-op."""
        tx = self.client.transaction()
        tx.check(z.CONTROLLER_EPOCH, epoch_zk_version)
        tx.create(z.topic_config_path(name), z.encode_topic_config(configs))
        tx.create(z.topic_path(name), assignment.encode())
        tx.create(z.partitions_path(name), b"")
        for p, state in sorted(states.items()):
            tx.create(z.partition_path(name, p), b"")
            tx.create(z.state_path(name, p), state.encode())
        results = await self._wait(tx.commit_async())
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved("the controller changed while creating the topic")
        if any(isinstance(r, NodeExistsError) for r in results[1:3]):
            raise AlreadyExists(f"topic {name!r} already exists")
        _raise_first(results)

    async def create_states(self, states: list[tuple[str, int, z.PartitionState]],
                            epoch_zk_version: int) -> None:
        """Initial states of partitions that have an assignment but no state yet."""
        if not states:
            return
        for topic, p, _ in states:
            await self._wait(self.client.ensure_path_async(z.partition_path(topic, p)))
        tx = self.client.transaction()
        tx.check(z.CONTROLLER_EPOCH, epoch_zk_version)
        for topic, p, state in states:
            tx.create(z.state_path(topic, p), state.encode())
        results = await self._wait(tx.commit_async())
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved("the controller changed while creating partition states")
        if any(isinstance(r, NodeExistsError) for r in results):
            raise Conflict("a partition state was created meanwhile")
        _raise_first(results)

    async def update_states(self, updates: list[tuple[str, int, z.PartitionState]],
                            epoch_zk_version: int) -> None:
        """Write new partition states, each conditioned on the state's zkVersion it was
        computed from (state.zk_version), all conditioned on the controller epoch."""
        if not updates:
            return
        tx = self.client.transaction()
        tx.check(z.CONTROLLER_EPOCH, epoch_zk_version)
        for topic, p, state in updates:
            tx.set_data(z.state_path(topic, p), state.encode(), version=state.zk_version)
        results = await self._wait(tx.commit_async())
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved("the controller changed while electing leaders")
        if any(isinstance(r, BadVersionError) for r in results):
            raise Conflict("a partition state changed meanwhile")
        _raise_first(results)

    async def add_partitions(self, name: str, assignment: z.TopicAssignment,
                             states: dict[int, z.PartitionState], epoch_zk_version: int) -> None:
        """The topic's new assignment and the new partitions' states, fenced."""
        tx = self.client.transaction()
        tx.check(z.CONTROLLER_EPOCH, epoch_zk_version)
        tx.set_data(z.topic_path(name), assignment.encode())
        for p, state in sorted(states.items()):
            tx.create(z.partition_path(name, p), b"")
            tx.create(z.state_path(name, p), state.encode())
        results = await self._wait(tx.commit_async())
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved("the controller changed while adding partitions")
        if any(isinstance(r, (NodeExistsError, NoNodeError)) for r in results):
            raise Conflict(f"topic {name!r} changed while partitions were added")
        _raise_first(results)

    async def set_topic_config(self, name: str, configs: dict[str, str]) -> None:
        """/config/topics/<t> (unfenced: Kafka's AdminZkClient writes it from any broker)."""
        await self._wait(self.client.set_async(z.topic_config_path(name),
                                               z.encode_topic_config(configs)))

    async def mark_for_deletion(self, name: str) -> None:
        """/admin/delete_topics/<name>: the controller deletes the topic (Kafka's layout)."""
        try:
            await self._wait(self.client.create_async(z.DELETE_TOPICS + "/" + name, b""))
        except NodeExistsError:
            pass

    async def delete_topic(self, name: str, partitions: list[int],
                           epoch_zk_version: int) -> None:
        """Every znode of the topic and its deletion marker, in one fenced multi-op."""
        tx = self.client.transaction()
        tx.check(z.CONTROLLER_EPOCH, epoch_zk_version)
        for p in partitions:
            tx.delete(z.state_path(name, p))
            tx.delete(z.partition_path(name, p))
        tx.delete(z.partitions_path(name))
        tx.delete(z.topic_path(name))
        tx.delete(z.topic_config_path(name))
        tx.delete(z.DELETE_TOPICS + "/" + name)
        results = await self._wait(tx.commit_async())
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved("the controller changed while deleting a topic")
        if any(isinstance(r, (NoNodeError, NotEmptyError)) for r in results):
            raise Conflict(f"topic {name!r} changed while being deleted")
        _raise_first(results)

    # -- a leader's ISR changes (fenced by the state's zkVersion) ---------------------------

    async def read_state(self, topic: str, partition: int) -> z.PartitionState | None:
        """One partition's state (a broker restating its own partitions after a cut)."""
        data, stat = await _or_none(self._wait(self.client.get_async(
            z.state_path(topic, partition))))
        return None if data is None else z.PartitionState.decode(data, stat.version)

    # -- producer ids ----------------------------------------------------------------------

    async def allocate_producer_ids(self, broker_id: int, size: int) -> z.ProducerIdBlock:
        """The next block of `size` producer ids, unique in the cluster: a conditional set of
        /latest_producer_id_block, retried when another broker got there first."""
        c = self.client
        while True:
            data, stat = await self._wait(c.get_async(z.PRODUCER_ID_BLOCK))
            first = z.ProducerIdBlock.decode(data).last + 1 if data else 0
            block = z.ProducerIdBlock(broker_id, first, first + size - 1)
            try:
                await self._wait(c.set_async(z.PRODUCER_ID_BLOCK, block.encode(),
                                             version=stat.version))
                return block
            except BadVersionError:
                continue


async def _or_none(fut):
    try:
        return await fut
    except NoNodeError:
        return None, None


def _raise_first(results) -> None:
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            raise r
    for r in results:
        if isinstance(r, ZookeeperError):
            raise r


def _stop(client: KazooClient) -> None:
    try:
        client.stop()
        client.close()
    except Exception:
        pass
