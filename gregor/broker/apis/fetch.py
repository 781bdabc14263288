"""Fetch (1): read record batches, long-polling through the fetch purgatory.

Stored batch bytes are served as they are (no record decoding): each partition's log returns
raw bytes up to the high watermark. Limits follow KIP-74: the response's max_bytes and each
partition's partition_max_bytes bound what is read, except that the first partition with data
always returns at least one whole batch, so a consumer can make progress past a batch larger
than its limits. When fewer than min_bytes are available and max_wait_ms > 0, a DelayedFetch
waits, woken whenever a watched partition's high watermark moves, until enough bytes have been
committed or the wait ends; then the partitions are read again.

A fetch with a replica_id (a follower of this partition's leader, cluster mode) reads up to the
log end instead, tells the leader how far that follower has come (which may move the high
watermark and complete acks=all produces), and waits in the purgatory for any new append.
Fetch v9+ carries the leader epoch the fetcher believes current: an older one is answered
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (KIP-320), for consumers and followers.

Fetch v0-v3 predate record batches: their readers get the data down-converted to magic 0
(v0-v1) or magic 1 (v2-v3) message sets. Fetch v7+ may ask for a KIP-227 fetch session
(_fetch_sessions.py): the broker then remembers the partitions and later requests and responses
carry only what changed. The purgatory watches every partition of the session.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.errors import ErrorCode, KafkaError
from ..purgatory import DelayedOperation
from ..security.checks import CLUSTER_ACTION, READ, cluster_allowed, denied_topics
from ..sessions import FINAL_EPOCH
from ._fetch_sessions import sessions_of

log = logging.getLogger("gregor.broker.fetch")

API_KEY = 1
VERSIONS = (0, 11)          # v12 is the first flexible version
INT32_MAX = (1 << 31) - 1


class PartitionFetch:
    __slots__ = ("topic", "partition", "offset", "max_bytes", "partition_obj", "snapshot",
                 "leader_epoch", "denied")

    def __init__(self, topic, partition, offset, max_bytes, partition_obj, leader_epoch=-1):
        self.denied = False        # not authorized: answered TOPIC_AUTHORIZATION_FAILED
        self.topic = topic
        self.leader_epoch = leader_epoch
        self.partition = partition
        self.offset = offset
        self.max_bytes = max_bytes
        self.partition_obj = partition_obj
        self.snapshot = partition_obj.committed_bytes if partition_obj is not None else 0


def handle(broker, ctx, request):
    version = ctx.api_version
    replica = request.get("replica_id", -1)
    session = None
    if version >= 7 and (request["session_id"] != 0 or request["session_epoch"] != FINAL_EPOCH):
        session = sessions_of(broker).context(request, replica >= 0)
        if isinstance(session, dict):
            return session                   # FETCH_SESSION_ID_NOT_FOUND / ..._EPOCH
    rm = broker.replica_manager
    if session is not None and session.fetches is not None:
        fetches = session.fetches            # incremental: every partition of the session
    else:
        fetches = []
        for t in request["topics"]:
            name = t["topic"]
            for pt in t["partitions"]:
                fetches.append(PartitionFetch(name, pt["partition"], pt["fetch_offset"],
                                              max(0, pt["partition_max_bytes"]),
                                              rm.get(name, pt["partition"]),
                                              pt.get("current_leader_epoch", -1)))
    max_bytes = request["max_bytes"] if version >= 3 else INT32_MAX
    max_bytes = min(max(0, max_bytes), int(broker.config.get("fetch.max.bytes")))
    read_committed = request.get("isolation_level", 0) == 1
    if broker.authorizer is not None:
        _authorize(broker, ctx, fetches, replica)
    if replica >= 0:
        read_committed = False
        _follower_fetched(broker, replica, fetches)
    to_read = fetches if session is None else session.select(fetches, read_committed)
    incremental = session is not None and session.fetches is not None
    body, nbytes, errors = read_partitions(broker, to_read, version, max_bytes, read_committed,
                                           replica)
    min_bytes = request["min_bytes"]
    if request["max_wait_ms"] <= 0 or not fetches or nbytes >= min_bytes or errors:
        return body if session is None else session.finish(body, fetches)
    fut = asyncio.get_running_loop().create_future()
    op = DelayedFetch(request["max_wait_ms"], broker, fetches, version, max_bytes,
                      read_committed, min_bytes, nbytes, fut, replica, session,
                      selected=to_read if incremental else None)
    op.just_read = True
    keys = session.keys() if incremental else [(f.topic, f.partition) for f in fetches]
    if rm.fetch_purgatory.try_complete_else_watch(op, keys):
        return fut  # completed between the read and the watch (cannot happen on one thread)
    return fut


def _authorize(broker, ctx, fetches, replica: int) -> None:
    """Consumers need READ on each topic; a follower (replica_id >= 0) CLUSTER_ACTION on the
    cluster, without which none of its partitions is read (nor its position recorded)."""
    if replica >= 0:
        denied = not cluster_allowed(broker, ctx, CLUSTER_ACTION)
        for f in fetches:
            f.denied = denied
        return
    denied = denied_topics(broker, ctx, READ, (f.topic for f in fetches))
    for f in fetches:
        f.denied = f.topic in denied


def _follower_fetched(broker, replica: int, fetches) -> None:
    """A follower's fetch offsets are its log ends: the leader's view of it moves, and with
    it maybe the high watermark (waking acks=all produces and consumers)."""
    rm = broker.replica_manager
    now_ms = int(time.time() * 1000)
    for f in fetches:
        p = rm.get(f.topic, f.partition)      # a session's partitions may be from long ago
        if p is None or f.denied or not p.is_leader or _epoch_error(p, f.leader_epoch):
            continue
        if p.update_follower(replica, f.offset, now_ms):
            rm.notify(p)
        if replica not in p.isr and broker.cluster is not None:
            broker.cluster.check_isr(p)       # caught up again? back into the ISR at once


def _epoch_error(p, leader_epoch: int) -> int:
    if leader_epoch < 0 or leader_epoch == p.leader_epoch:
        return ErrorCode.NONE
    return (ErrorCode.FENCED_LEADER_EPOCH if leader_epoch < p.leader_epoch
            else ErrorCode.UNKNOWN_LEADER_EPOCH)


def read_partitions(broker, fetches, version: int, max_bytes: int, read_committed: bool,
                    replica: int = -1):
    """(response body, bytes of records read, whether any partition had an error)."""
    rm = broker.replica_manager
    remaining = max_bytes
    min_one = True            # KIP-74: the first batch found is returned even if too large
    total = 0
    errors = False
    topics: dict[str, list] = {}
    legacy_magic = None if version >= 4 else (0 if version <= 1 else 1)
    for f in fetches:
        p = rm.get(f.topic, f.partition)
        out = {"partition_index": f.partition, "error_code": ErrorCode.NONE,
               "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
               "aborted_transactions": [] if read_committed else None,
               "preferred_read_replica": -1, "records": b""}
        topics.setdefault(f.topic, []).append(out)
        if f.denied:
            out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            errors = True
            continue
        if broker.cluster is not None and (p is None or not p.is_leader):
            # Only the leader serves reads, to consumers and followers alike.
            out["error_code"] = broker.cluster.partition_error(f.topic, f.partition)
            errors = True
            continue
        if p is None:
            out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            errors = True
            continue
        code = _epoch_error(p, f.leader_epoch)
        if code:
            out["error_code"] = code
            errors = True
            continue
        hw = p.high_watermark
        log_ = p.log
        lso = p.last_stable_offset
        out["high_watermark"] = hw
        out["last_stable_offset"] = lso
        out["log_start_offset"] = log_.log_start_offset
        # read_committed readers stop at the LSO (nothing of an open transaction)
        end = log_.log_end_offset if replica >= 0 else lso if read_committed else hw
        try:
            if f.offset < log_.log_start_offset or f.offset > log_.log_end_offset:
                out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                errors = True
                continue
            if f.offset >= end or (remaining <= 0 and not min_one):
                continue
            limit = min(f.max_bytes, remaining)
            data = log_.read(f.offset, limit, max_offset=end, min_one_batch=min_one)
        except KafkaError as e:
            out["error_code"] = e.code
            errors = True
            continue
        except Exception:
            log.exception("reading %s-%d at offset %d failed", f.topic, f.partition, f.offset)
            out["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            errors = True
            continue
        if data and read_committed:
            out["aborted_transactions"] = [
                {"producer_id": pid, "first_offset": first}
                for pid, first in log_.collect_aborted_transactions(f.offset,
                                                                    _end_of(data))]
        if data:
            min_one = False
            remaining -= len(data)
            total += len(data)
            if legacy_magic is not None:
                try:
                    data = _down_convert(data, legacy_magic, f)
                except KafkaError as e:     # zstd cannot be expressed in magic 0/1
                    out["error_code"] = e.code
                    errors = True
                    continue
            out["records"] = data
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
    return body, total, errors


def _end_of(data) -> int:
    """The offset after the last whole batch in data (raw v2 batches from the log)."""
    from ...protocol.records.header import iter_headers
    last = -1
    for _, h in iter_headers(data):
        last = h.base_offset + h.last_offset_delta
    return last + 1


def _down_convert(data: bytes, magic: int, f: PartitionFetch) -> bytes:
    from ...protocol.records import legacy
    try:
        return legacy.down_convert(data, magic)
    except KafkaError:
        raise
    except Exception:
        log.exception("down-converting %s-%d at offset %d to magic %d failed", f.topic,
                      f.partition, f.offset, magic)
        return b""


class DelayedFetch(DelayedOperation):
    """A fetch waiting for min_bytes of newly committed data in any of its partitions.

    The purgatory tells it which partition changed (try_complete_for), so a fetch of many
    partitions re-checks that one alone and keeps a running count of the bytes committed
    since the read; partitions it was not told about have not changed since the read. For a
    fetch session, what completes it reads the partitions of the first read and the ones it
    was told about; the rest had nothing to say then and have not changed."""

    def __init__(self, timeout_ms, broker, fetches, version, max_bytes, read_committed,
                 min_bytes, bytes_read, future, replica=-1, session=None, selected=None):
        super().__init__(timeout_ms)
        self.session = session        # a fetch session's context, or None
        self.selected = selected      # incremental session: the partitions read first
        self.just_read = False
        self.replica = replica
        self.broker = broker
        self.fetches = fetches
        self.version = version
        self.max_bytes = max_bytes
        self.read_committed = read_committed
        self.min_bytes = min_bytes
        self.bytes_read = bytes_read
        self.future = future
        self._by_key = None           # (topic, partition) -> its fetch, made when first told
        self._new_bytes: dict = {}    # (topic, partition) -> bytes committed since the read
        self.available = bytes_read

    def try_complete(self) -> bool:
        if self.just_read:
            # the purgatory's first check comes right after the read, in the same callback:
            # nothing can have changed, so skip a second pass over every partition
            self.just_read = False
            return False
        get = self.broker.replica_manager.partitions.get
        available = self.bytes_read
        for f in self.fetches:
            new = self._check(f, get((f.topic, f.partition)))
            if new is None:
                return self.force_complete()
            available += new
        if available >= self.min_bytes:
            return self.force_complete()
        return False

    def try_complete_for(self, key) -> bool:
        by_key = self._by_key
        if by_key is None:
            by_key = self._by_key = {(f.topic, f.partition): f for f in self.fetches}
        f = by_key.get(key)
        if f is None:
            return self.try_complete()
        new = self._check(f, self.broker.replica_manager.partitions.get(key))
        if new is None:
            return self.force_complete()
        self.available += new - self._new_bytes.get(key, 0)
        self._new_bytes[key] = new
        if self.available >= self.min_bytes:
            return self.force_complete()
        return False

    def _check(self, f, p):
        """None when the fetch must answer now for this partition's sake, else the bytes
        committed in it since the read."""
        if p is not f.partition_obj:
            return None                    # created, deleted or recreated meanwhile
        if p is None:
            return 0
        if not p.is_leader:
            return None                    # leadership moved: answer with the error
        log_ = p.log
        if (f.offset > p.high_watermark and f.offset > log_.log_end_offset) or \
                f.offset < log_.log_start_offset:
            return None                    # now out of range: answer with the error
        if self.replica >= 0:
            if log_.log_end_offset > f.offset or _epoch_error(p, f.leader_epoch):
                return None                # a follower wants any append at once
            return 0
        if self.read_committed:
            # bytes are counted below the HW; what a read_committed reader may take is
            # bounded by the LSO: answer as soon as anything stable is there
            if p.last_stable_offset > f.offset and p.committed_bytes > f.snapshot:
                return None
            return 0
        return p.committed_bytes - f.snapshot

    def _to_read(self):
        session = self.session
        if session is None:
            return self.fetches
        if self.selected is None:          # a full session fetch reads every partition
            return session.select(self.fetches, self.read_committed)
        wanted = {(c.topic, c.partition) for c in self.selected}
        wanted.update(self._new_bytes)
        if len(wanted) == len(self.selected):
            candidates = self.selected
        else:                              # in the session's (round-robin) order
            candidates = [c for c in self.fetches if (c.topic, c.partition) in wanted]
        return session.select(candidates, self.read_committed)

    def on_complete(self) -> None:
        if self.future.done():
            return
        session = self.session
        try:
            body, _, _ = read_partitions(self.broker, self._to_read(), self.version,
                                         self.max_bytes, self.read_committed, self.replica)
            if session is not None:
                body = session.finish(body, self.fetches)
        except Exception as e:  # surfaces as a closed connection with a logged error
            self.future.set_exception(e)
            return
        self.future.set_result(body)
