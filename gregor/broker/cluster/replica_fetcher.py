"""Followers: one fetcher per leader broker copies the partitions this broker follows from it.

A fetcher keeps one connection to its leader and loops:
1. partitions that just got a new leader or leader epoch first find where their log and the
   leader's diverge: OffsetForLeaderEpoch with the latest epoch of their own leader epoch cache
   (KIP-101/279), then truncate there (to the high watermark only when no epoch is known, as
   Kafka does);
2. one Fetch with this broker's id as replica_id for every partition ready to fetch, from its
   log end, with the leader epoch it believes current (the leader refuses a stale one);
3. the batches are appended with the leader's offsets and epochs; the follower's high
   watermark becomes the leader's (capped by its own log end).
The fetch offsets it sends are how the leader learns how far this follower has come: that
moves the leader's high watermark and keeps this broker in the ISR.

Errors: a partition whose leader answers NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH (the
new leader has not read ZooKeeper's new state yet: both brokers learn it from the same watch,
and the follower is often first) is retried after 50 ms, doubling up to
replica.fetch.backoff.ms, so a failover does not wait a whole backoff for that race; other
errors (a stale epoch of ours: our next view of ZooKeeper re-follows) wait
replica.fetch.backoff.ms; a connection that fails or times out (replica.socket.timeout.ms) is
reopened after the backoff, one the leader had closed meanwhile at once (broker_connection.py,
which also secures it as the inter-broker listener requires).
"""
from __future__ import annotations

import asyncio
import logging

from ...protocol import messages
from ...protocol.errors import ErrorCode, KafkaError
from ...log.log import AppendOffsetError
from .broker_connection import BrokerConnection

log = logging.getLogger("gregor.broker.cluster.fetcher")

FETCH = messages.api("Fetch")
EPOCHS = messages.api("OffsetForLeaderEpoch")
FETCH_VERSION = 11          # the highest this broker serves: leader epochs (v9+)
EPOCHS_VERSION = 3          # replica_id (v3+), current_leader_epoch (v2+)

# the leader-to-be has not applied the state we act on yet: worth asking again soon
NOT_READY_YET = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH}
FIRST_RETRY_S = 0.05
RETRY_LATER = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
               ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
               ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REPLICA_NOT_AVAILABLE}


class FollowedPartition:
    __slots__ = ("partition", "epoch", "truncate", "resume_at", "not_ready")

    def __init__(self, partition, epoch: int):
        self.partition = partition
        self.epoch = epoch
        self.truncate = True            # find the divergence point before fetching
        self.resume_at = 0.0            # loop time before which it is not fetched (backoff)
        self.not_ready = 0              # NOT_READY_YET answers in a row (quick retries)


class ReplicaFetcher:
    """Copies every partition this broker follows from one leader."""

    def __init__(self, manager: "ReplicaFetcherManager", leader_id: int):
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], FollowedPartition] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._conn: BrokerConnection | None = None
        self._endpoint: tuple[str, int] | None = None
        self._stopping = False
        self.fetches = 0                # for tests and logs

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def add(self, partition, epoch: int) -> None:
        self.partitions[partition.key] = FollowedPartition(partition, epoch)
        self._wake.set()

    def remove(self, key) -> None:
        self.partitions.pop(key, None)

    async def stop(self) -> None:
        # The flag as well as the cancel: asyncio.wait_for (3.11) can swallow a cancel that
        # lands as the wait finishes, and the loop must not go on fetching after that.
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            while not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=1.0)
            try:
                self._task.result()
            except (asyncio.CancelledError, Exception):
                pass
        if self._conn is not None:
            self._conn.close()

    # -- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        cfg = self.manager.config
        backoff = int(cfg.get("replica.fetch.backoff.ms")) / 1000.0
        loop = asyncio.get_running_loop()
        while not self._stopping:
            ready = [fp for fp in self.partitions.values() if fp.resume_at <= loop.time()]
            if not ready:
                self._wake.clear()
                wait = min((fp.resume_at for fp in self.partitions.values()), default=None)
                timeout = None if wait is None else max(0.0, wait - loop.time())
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                conn = self._connection()
                if conn is None:
                    await asyncio.sleep(backoff)
                    continue
                await self._truncate([fp for fp in ready if fp.truncate], conn)
                await self._fetch([fp for fp in ready if not fp.truncate
                                   and fp.resume_at <= loop.time()], conn)
            except asyncio.CancelledError:
                raise
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                    ConnectionError, KafkaError) as e:
                log.warning("fetching from broker %d failed: %s; retrying in %.1fs",
                            self.leader_id, e or type(e).__name__, backoff)
                self._drop_connection()
                await asyncio.sleep(backoff)
            except Exception:
                log.exception("fetcher for leader %d failed; retrying", self.leader_id)
                self._drop_connection()
                await asyncio.sleep(backoff)

    def _connection(self) -> BrokerConnection | None:
        endpoint = self.manager.endpoint(self.leader_id)
        if endpoint is None:
            return None
        if self._conn is None or endpoint != self._endpoint:
            self._drop_connection()
            cfg = self.manager.config
            self._conn = BrokerConnection(
                endpoint[0], endpoint[1], f"gregor-replica-{self.manager.broker_id}",
                int(cfg.get("replica.socket.timeout.ms")) / 1000.0, self.manager.security)
            self._endpoint = endpoint
        return self._conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def _back_off(self, fp: FollowedPartition, code: int | None = None) -> None:
        backoff = int(self.manager.config.get("replica.fetch.backoff.ms")) / 1000.0
        if code in NOT_READY_YET:
            backoff = min(backoff, FIRST_RETRY_S * (2 ** fp.not_ready))
            fp.not_ready += 1
        fp.resume_at = asyncio.get_running_loop().time() + backoff

    # -- truncation ------------------------------------------------------------------------

    async def _truncate(self, todo: list[FollowedPartition], conn: BrokerConnection) -> None:
        if not todo:
            return
        by_topic: dict[str, list] = {}
        for fp in todo:
            p = fp.partition
            by_topic.setdefault(p.topic, []).append({
                "partition": p.index, "current_leader_epoch": fp.epoch,
                "leader_epoch": p.log.leader_epochs.latest_epoch})
        body = await conn.request(EPOCHS, EPOCHS_VERSION, {
            "replica_id": self.manager.broker_id,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
        answers = {(t["topic"], pt["partition"]): pt for t in body["topics"]
                   for pt in t["partitions"]}
        for fp in todo:
            p = fp.partition
            if self.partitions.get(p.key) is not fp:
                continue                  # re-added meanwhile: the new entry starts over
            a = answers.get(p.key)
            if a is None or a["error_code"]:
                log.info("%s-%d: leader %d answered OffsetForLeaderEpoch with %s; retrying",
                         p.topic, p.index, self.leader_id,
                         "nothing" if a is None else ErrorCode(a["error_code"]).name)
                self._back_off(fp, None if a is None else a["error_code"])
                continue
            fp.not_ready = 0
            self._truncate_one(fp, a["leader_epoch"], a["end_offset"])

    def _truncate_one(self, fp: FollowedPartition, leader_epoch: int, end_offset: int) -> None:
        p = fp.partition
        log_ = p.log
        leo = log_.log_end_offset
        if end_offset < 0:
            # The leader knows no epoch of ours (or we have none): Kafka's fallback.
            target = p.high_watermark
        else:
            target = min(end_offset, leo)
            if leader_epoch != log_.leader_epochs.latest_epoch and leader_epoch >= 0:
                # our latest epoch is unknown to the leader: stop where our copy of the
                # leader's answered epoch ends (KIP-279)
                target = min(target, log_.leader_epochs.end_offset_for(leader_epoch, leo)[1])
        if target < leo:
            log.info("%s-%d: truncating from %d to %d (leader %d, epoch %d)", p.topic, p.index,
                     leo, target, self.leader_id, fp.epoch)
            log_.truncate_to(target)
            p.reset_after_truncation()
        fp.truncate = False

    # -- fetching --------------------------------------------------------------------------

    async def _fetch(self, todo: list[FollowedPartition], conn: BrokerConnection) -> None:
        if not todo:
            return
        cfg = self.manager.config
        by_topic: dict[str, list] = {}
        for fp in todo:
            p = fp.partition
            by_topic.setdefault(p.topic, []).append({
                "partition": p.index, "current_leader_epoch": fp.epoch,
                "fetch_offset": p.log.log_end_offset, "log_start_offset": p.log.log_start_offset,
                "partition_max_bytes": int(cfg.get("replica.fetch.max.bytes")),
                "last_fetched_epoch": -1})
        request = {
            "cluster_id": None, "replica_id": self.manager.broker_id,
            "max_wait_ms": int(cfg.get("replica.fetch.wait.max.ms")),
            "min_bytes": int(cfg.get("replica.fetch.min.bytes")),
            "max_bytes": int(cfg.get("replica.fetch.response.max.bytes")),
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "forgotten_topics_data": [], "rack_id": ""}
        body = await conn.request(FETCH, FETCH_VERSION, request)
        self.fetches += 1
        if body.get("error_code"):
            raise KafkaError(f"fetch refused: error {body['error_code']}")
        wanted = {fp.partition.key: fp for fp in todo}
        for t in body["responses"]:
            for pt in t["partitions"]:
                fp = wanted.get((t["topic"], pt["partition_index"]))
                if fp is None or self.partitions.get(fp.partition.key) is not fp:
                    continue
                self._apply(fp, pt)

    def _apply(self, fp: FollowedPartition, pt: dict) -> None:
        p = fp.partition
        code = pt["error_code"]
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._out_of_range(fp, pt)
            return
        if code:
            if code not in RETRY_LATER:
                log.warning("%s-%d: leader %d answered %s", p.topic, p.index, self.leader_id,
                            ErrorCode(code).name)
            self._back_off(fp, code)
            return
        fp.not_ready = 0
        records = pt["records"]
        if records:
            try:
                p.append_as_follower(records)
            except AppendOffsetError as e:
                log.warning("%s-%d: %s; checking for divergence again", p.topic, p.index, e)
                fp.truncate = True
                return
        if p.follower_high_watermark(pt["high_watermark"]):
            self.manager.notify(p)

    def _out_of_range(self, fp: FollowedPartition, pt: dict) -> None:
        """Our log end is outside the leader's log: below its start (it deleted what we
        lack: start over there) or past its end (divergence: truncate first)."""
        p = fp.partition
        start = pt.get("log_start_offset", -1)
        if 0 <= start and p.log.log_end_offset < start:
            log.info("%s-%d: leader %d starts at %d, after our log end %d: starting over there",
                     p.topic, p.index, self.leader_id, start, p.log.log_end_offset)
            p.log.truncate_fully(start)
            p.reset_after_truncation()
            p.high_watermark = max(p.high_watermark, start)
        else:
            fp.truncate = True


class ReplicaFetcherManager:
    """The fetchers of one broker, one per leader it follows partitions from."""

    def __init__(self, broker, endpoint_of, security=None):
        self.broker = broker
        self.security = security             # InterBrokerSecurity (None: PLAINTEXT)
        self.broker_id = broker.broker_id
        self.config = broker.config
        self.endpoint = endpoint_of          # leader id -> (host, port) or None
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._where: dict[tuple[str, int], int] = {}   # partition -> its fetcher's leader
        self.closed = False

    def follow(self, partition, leader_id: int, epoch: int) -> None:
        """Fetch partition from leader_id at epoch (divergence checked first)."""
        self.unfollow(partition.key)
        if leader_id < 0 or self.closed:
            return                           # offline, or this broker is stopping
        f = self.fetchers.get(leader_id)
        if f is None:
            f = self.fetchers[leader_id] = ReplicaFetcher(self, leader_id)
            f.start()
        f.add(partition, epoch)
        self._where[partition.key] = leader_id

    def unfollow(self, key) -> None:
        leader = self._where.pop(key, None)
        if leader is not None and leader in self.fetchers:
            self.fetchers[leader].remove(key)

    def following(self, key) -> int | None:
        return self._where.get(key)

    def notify(self, partition) -> None:
        self.broker.replica_manager.notify(partition)

    async def close(self) -> None:
        self.closed = True
        for f in list(self.fetchers.values()):
            await f.stop()
        self.fetchers.clear()
        self._where.clear()
