"""RecordAccumulator: one deque of ProducerBatch per partition, memory bounded by a BufferPool.

send() threads append; the sender thread asks which brokers have sendable data (`ready`),
takes batches off the front of the deques (`drain`), puts failed ones back in order
(`reenqueue`), and settles them. Records are encoded into the batch as they are appended, so a
record is encoded exactly once. Sans-I/O: time comes in as `now` (seconds, monotonic).
"""
from __future__ import annotations

import collections
import time

from ..errors import KafkaTimeoutError, ProducerClosedError
from .batch import BATCH_OVERHEAD, RECORD_OVERHEAD, ProducerBatch, future_for
from .fastpath import new_lock
from .split import split_records
from .staging import KeyedStage, distribute


# Python-side bytes a queued record costs beyond its wire size: three list slots (24), the
# timestamp int (32) and the headers of the key and value bytes objects (2 x 33). (send()'s
# batches keep the timestamp as a double now, 8 bytes: this errs on the safe side.) Charged to
# the BufferPool when a batch stops taking records, so buffer.memory bounds real memory.
PY_RECORD_OVERHEAD = 122
# What an encoded batch keeps per record: its timestamp (a double in send()'s batches; a
# list slot and an int object in send_batch's lists).
TIMESTAMP_OVERHEAD = 8
LIST_TIMESTAMP_OVERHEAD = 40


def estimate_record_size(key, value, headers) -> int:
    n = RECORD_OVERHEAD + (len(key) if key is not None else 0) + \
        (len(value) if value is not None else 0)
    if headers:
        for hk, hv in headers:
            n += len(hk) + (len(hv) if hv is not None else 0) + 6
    return n


# A keyed stage holds up to this many batch.size worth of records per partition before it
# is distributed. Distributing has a fixed cost (~40 numpy calls, ~60 us) besides its
# per-record work: at 1 batch per partition (~130 records of 110 B each) that fixed part was
# ~80 ns a record, at 4 ~20 (benchmarks/bench_producer_send.py). A stage still leaves after
# linger.ms at the latest, so records wait no longer than with batch.size-sized batches; the
# batches it makes are up to 4 x batch.size, like the merges under back-pressure.
STAGE_BATCHES = 4
# Largest batch that merging makes: Kafka's default message.max.bytes (1 MiB + 12) with room
# to spare, so a broker with default limits never refuses a merged batch.
MERGE_LIMIT = 1_000_000


def _stage_put(st: KeyedStage, rec, timestamp, key, value, callback):
    keys = st.keys
    i = len(keys)
    keys.append(key)
    st.values.append(value)
    st.timestamps.append(timestamp)
    st.size += rec
    if callback is not None:
        if st.callbacks is None:
            st.callbacks = []
        st.callbacks.append((i, callback))
    return future_for(st.result, i)


def _fresh(b: ProducerBatch) -> bool:
    """Never sent and built from send() records (bulk batches are already large)."""
    return not b.attempts and b.base_sequence < 0 and b.data is None and not b.bulk \
        and not b.no_merge


class ReadyCheck:
    __slots__ = ("nodes", "next_delay", "unknown_leader_topics")

    def __init__(self, nodes, next_delay, unknown):
        self.nodes = nodes
        self.next_delay = next_delay
        self.unknown_leader_topics = unknown


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_s: float, compression: int, pool,
                 delivery_timeout_s: float, clock=time.monotonic, max_records=None):
        self.batch_size = max(batch_size, 1)
        # batch.num.messages (None: no count limit). send() does not count records; a batch
        # with more is split at drain (_take), and merges and send_batch stay within it.
        self.max_records = max_records
        self.linger = linger_s
        self.compression = compression
        self.pool = pool
        self.delivery_timeout = delivery_timeout_s
        self.clock = clock
        self.lock = new_lock()
        # topic -> list indexed by partition of deques (None until used): no tuple per send().
        self.topics: dict[str, list] = {}
        # topic -> list indexed by partition of the batch still taking records (or None).
        self.open: dict[str, list] = {}
        # topic -> keyed records waiting to be partitioned in one pass (see staging.py).
        self.stages: dict[str, KeyedStage] = {}
        self.incomplete: set[ProducerBatch] = set()
        self.flushes_in_progress = 0
        self.closed = False
        self._drain_index: dict[int, int] = {}
        self.txn = None  # idempotence manager, set by the producer when enabled
        self.interceptors = None  # called on acknowledgement, set by the producer
        # Per-node ready/drain times for partitioner.availability.timeout.ms (availability.py),
        # set by the producer when that is on; the sender reports to it after each ready().
        self.node_availability = None

    # -- append (send() threads) ------------------------------------------------------------
    def deque_for(self, topic: str, partition: int) -> collections.deque:
        """The partition's deque (call with the lock held)."""
        parts = self.topics.get(topic)
        if parts is None or partition >= len(parts):
            self._grow(topic, partition + 1)
            parts = self.topics[topic]
        dq = parts[partition]
        if dq is None:
            dq = parts[partition] = collections.deque()
        return dq

    def _grow(self, topic: str, n: int) -> None:
        # In place: send()'s fast path holds on to the open-batch list of each topic.
        parts = self.topics.setdefault(topic, [])
        if len(parts) < n:
            parts.extend([None] * (n - len(parts)))
        opened = self.open.setdefault(topic, [])
        if len(opened) < n:
            opened.extend([None] * (n - len(opened)))

    def ensure_topic(self, topic: str, n: int) -> list:
        """Make room for n partitions; returns the topic's open-batch list (stable)."""
        with self.lock:
            self._grow(topic, n)
            return self.open[topic]

    def _grow_open(self, b: ProducerBatch) -> bool:
        """Under back-pressure (batches already wait ahead of the open one) the drain would
        merge the next batch into this one anyway: let the open batch grow instead of opening
        another, which saves the per-batch work. It doubles (by at least batch.size), so a
        1 MB batch takes ~6 trips through send()'s slow path, not ~60. Never blocks."""
        limit = min(MERGE_LIMIT, self.pool.total // 8)
        step = min(max(self.batch_size, b.max_bytes), limit - b.max_bytes)
        if not _fresh(b) or step < self.batch_size:
            return False
        if self.max_records is not None and len(b.keys) >= self.max_records:
            return False  # it would only be split again at drain
        if not self.pool.try_allocate(step):
            return False
        b.max_bytes += step
        b.reserved += step
        return True

    def _close_open(self, topic: str, partition: int) -> None:
        opened = self.open.get(topic)
        if opened is not None and partition < len(opened) and opened[partition] is not None:
            self._seal(opened[partition])
            opened[partition] = None

    def _seal(self, b: ProducerBatch) -> None:
        """The batch takes no more records: charge its Python overhead to the pool."""
        b.full = True
        extra = len(b.keys) * PY_RECORD_OVERHEAD
        if extra:
            self.pool.charge(extra)
            b.reserved += extra

    def append(self, topic, partition, timestamp, key, value, headers, callback,
               max_block_s, now=None, may_grow=True):
        """Append one record; returns (future, new_batch). new_batch is the batch this record
        opened (None when it joined an open one). Blocks up to max_block_s for buffer memory
        when a new batch is needed."""
        with self.lock:
            if self.stages and topic in self.stages:
                self._flush_stage(topic)  # staged records of the topic go first
            dq = self.deque_for(topic, partition)
            b = self.open[topic][partition]
            if b is not None:
                fut = b.try_append(timestamp, key, value, headers, callback)
                if fut is not None:
                    return fut, None
                if may_grow and len(dq) > 1 and self._grow_open(b):
                    fut = b.try_append(timestamp, key, value, headers, callback)
                    if fut is not None:
                        return fut, None
                self._close_open(topic, partition)
        if self.closed:
            raise ProducerClosedError("send() after close(): the producer is closed")
        size = max(self.batch_size,
                   estimate_record_size(key, value, headers) + BATCH_OVERHEAD)
        self.pool.allocate(size, max_block_s)
        try:
            with self.lock:
                if self.closed:
                    raise ProducerClosedError("send() after close(): the producer is closed")
                dq = self.deque_for(topic, partition)
                b = self.open[topic][partition]
                if b is not None:
                    fut = b.try_append(timestamp, key, value, headers, callback)
                    if fut is not None:
                        return fut, None  # another thread opened a batch meanwhile
                    self._close_open(topic, partition)
                b = ProducerBatch(topic, partition, self.clock() if now is None else now,
                                  size, self.batch_size, self.compression)
                b.interceptors = self.interceptors
                size = 0
                fut = b.try_append(timestamp, key, value, headers, callback)
                dq.append(b)
                self.open[topic][partition] = b
                self.incomplete.add(b)
                return fut, b
        finally:
            if size:
                self.pool.deallocate(size)

    # -- keyed staging (see staging.py) -----------------------------------------------------
    def stage_append(self, topic, n, timestamp, key, value, callback, max_block_s, now=None):
        """Stage a keyed record of a topic with n partitions; returns (future, new_stage)."""
        rec = RECORD_OVERHEAD + len(key) + (len(value) if value is not None else 0)
        with self.lock:
            st = self.stages.get(topic)
            if st is not None:
                size = st.size + rec
                if size <= st.capacity and st.n == n:
                    # _stage_put inlined: this is send()'s path for keyed records.
                    keys = st.keys
                    i = len(keys)
                    keys.append(key)
                    st.values.append(value)
                    st.timestamps.append(timestamp)
                    st.size = size
                    if callback is not None:
                        if st.callbacks is None:
                            st.callbacks = []
                        st.callbacks.append((i, callback))
                    return future_for(st.result, i), None
                self._flush_stage(topic)
        if self.closed:
            raise ProducerClosedError("send() after close(): the producer is closed")
        cap = max(min(STAGE_BATCHES * self.batch_size * n, MERGE_LIMIT, self.pool.total // 8),
                  min(self.batch_size * n, MERGE_LIMIT), rec + BATCH_OVERHEAD)
        self.pool.allocate(cap, max_block_s)
        with self.lock:
            if self.closed:
                self.pool.deallocate(cap)
                raise ProducerClosedError("send() after close(): the producer is closed")
            st = self.stages.get(topic)
            if st is not None:
                if st.size + rec <= st.capacity and st.n == n:
                    self.pool.deallocate(cap)  # another thread opened one meanwhile
                    return _stage_put(st, rec, timestamp, key, value, callback), None
                self._flush_stage(topic)
            st = self.stages[topic] = KeyedStage(topic, n, cap, cap,
                                                 self.clock() if now is None else now)
            return _stage_put(st, rec, timestamp, key, value, callback), st

    def _flush_stage(self, topic: str) -> None:
        """Partition the topic's staged records into queued batches (lock held)."""
        st = self.stages.pop(topic)
        if not st.keys:
            self.pool.deallocate(st.reserved)
            return
        self._grow(topic, st.n)
        opened = self.open[topic]
        limit = min(MERGE_LIMIT, self.pool.total // 8)
        for b in distribute(st, opened, limit, self.compression, self.batch_size, _fresh):
            dq = self.deque_for(topic, b.partition)
            self._close_open(topic, b.partition)
            b.interceptors = self.interceptors
            dq.append(b)
            self.incomplete.add(b)
            opened[b.partition] = b  # open: later records of the partition join it
        if st.reserved:  # what the batches did not take
            self.pool.deallocate(st.reserved)
            st.reserved = 0

    def seal_open(self) -> None:
        """Make every open batch (and staged record) ready to send now instead of after
        linger.ms: the kafka-go Writer's batch_size (a message count) asks for this."""
        with self.lock:
            for t in list(self.stages):
                self._flush_stage(t)
            for opened in self.open.values():
                for p, b in enumerate(opened):
                    if b is not None:
                        self._seal(b)
                        opened[p] = None

    def flush_stages(self, topic: str | None = None) -> None:
        with self.lock:
            for t in ([topic] if topic is not None else list(self.stages)):
                if t in self.stages:
                    self._flush_stage(t)

    def add_batch(self, batch: ProducerBatch) -> None:
        """Queue a complete batch built elsewhere (send_batch's bulk path), possibly already
        encoded; its memory is already reserved."""
        with self.lock:
            if self.stages and batch.topic in self.stages:
                self._flush_stage(batch.topic)
            dq = self.deque_for(batch.topic, batch.partition)
            self._close_open(batch.topic, batch.partition)
            batch.full = True
            if batch.keys is not None:
                # The bulk batch holds slices of the caller's lists: two pointers per record.
                extra = 16 * len(batch.keys)
                self.pool.charge(extra)
                batch.reserved += extra
            batch.interceptors = self.interceptors
            dq.append(batch)
            self.incomplete.add(batch)

    # -- sender side -----------------------------------------------------------------------
    def ready(self, metadata, now: float, busy=None) -> ReadyCheck:
        """Leaders with sendable data. `busy(node)` says a request to node is in flight: then
        a lone full batch waits (up to linger.ms) for the answer, so batches queued meanwhile
        leave together in one larger request instead of one small request each."""
        nodes = set()
        unknown = set()
        next_delay = 3600.0
        exhausted = self.pool.queued > 0
        urgent = exhausted or self.flushes_in_progress > 0 or self.closed
        linger = self.linger
        txn = self.txn
        cap = self.max_records
        if self.stages:
            with self.lock:
                for topic, st in list(self.stages.items()):
                    waited = now - st.created
                    if urgent or waited >= linger:
                        self._flush_stage(topic)
                    else:
                        next_delay = min(next_delay, linger - waited)
        # Read without the lock: send() threads only append (to deques and to the open
        # batch), and only this thread takes batches off. Each contended acquisition would
        # cost the sender a GIL hand-off (up to the 5 ms switch interval) while a send() loop
        # runs, so the sender locks only to take batches (drain).
        for topic, parts in list(self.topics.items()):
            tinfo = metadata.topics.get(topic)
            for p, dq in enumerate(parts):
                if not dq:
                    continue
                pinfo = tinfo.partitions.get(p) if tinfo is not None else None
                leader = pinfo.leader if pinfo is not None else -1
                if leader < 0:
                    unknown.add(topic)
                    continue
                if leader in nodes:
                    continue
                b = dq[0]
                if b.attempts and b.retry_at > now:
                    next_delay = min(next_delay, b.retry_at - now)
                    continue
                if txn is not None and not txn.can_send(b):
                    continue
                waited = now - b.created
                if urgent or len(dq) > 1 or waited >= linger or b.attempts:
                    nodes.add(leader)
                elif (b.full or (cap is not None and b.record_count >= cap)) and (
                        busy is None or not busy(leader)):
                    nodes.add(leader)  # full: batch.size bytes or batch.num.messages records
                else:
                    next_delay = min(next_delay, linger - waited)
        return ReadyCheck(nodes, max(0.0, next_delay), unknown)

    def drain(self, metadata, nodes, max_request_size: int, now: float) -> dict:
        """{node: [batches]} at most one batch per partition and about max_request_size bytes
        per node; the batches are closed (final bytes made) outside the lock."""
        out = {}
        txn = self.txn
        with self.lock:
            by_node: dict[int, list] = {}
            for topic, parts in self.topics.items():
                tinfo = metadata.topics.get(topic)
                if tinfo is None:
                    continue
                for p, dq in enumerate(parts):
                    if dq:
                        pinfo = tinfo.partitions.get(p)
                        if pinfo is not None and pinfo.leader in nodes:
                            by_node.setdefault(pinfo.leader, []).append(dq)
            for node, dqs in by_node.items():
                n = len(dqs)
                start = self._drain_index.get(node, 0) % n
                size = 0
                taken = []
                for i in range(n):
                    dq = dqs[(start + i) % n]
                    if not dq:
                        continue
                    b = dq[0]
                    if b.attempts and b.retry_at > now:
                        continue
                    if txn is not None and not txn.can_send(b):
                        continue
                    est = b.estimated_size()
                    if taken and size + est > max_request_size:
                        break
                    dq.popleft()
                    if self.open[b.topic][b.partition] is b:
                        self.open[b.topic][b.partition] = None
                        self._seal(b)
                    if dq and _fresh(b):
                        est = self._merge_queued(b, dq, max_request_size - size)
                    if self.max_records is not None and b.data is None and not b.bulk \
                            and len(b.keys) > self.max_records:
                        b = self._split_records(b, dq)
                        est = b.estimated_size()
                    b.full = True
                    b.drained_at = now
                    size += est
                    taken.append(b)
                    if txn is not None:
                        txn.assign_sequence(b)
                self._drain_index[node] = start + 1
                if taken:
                    out[node] = taken
        transactional = txn is not None and txn.transactional
        for batches in out.values():
            for b in batches:
                if b.data is None:
                    b.close(transactional)
                    self.account_encoded(b)
                elif b.stale:
                    b.rewrite_producer_fields(transactional)
        return out

    def account_encoded(self, b: ProducerBatch) -> None:
        """From now on the batch holds its encoded bytes and its timestamps list: make the
        pool reservation say so, and let the per-record objects go."""
        per = LIST_TIMESTAMP_OVERHEAD if type(b.timestamps) is list else TIMESTAMP_OVERHEAD
        held = len(b.data) + per * b.record_count
        delta = b.reserved - held
        if delta > 0:
            self.pool.deallocate(delta)
        elif delta < 0:
            self.pool.charge(-delta)
        b.reserved = held
        b.release_records()

    def _merge_queued(self, b: ProducerBatch, dq, room: int) -> int:
        """Fold the batches queued behind b (same partition, never sent) into b, up to
        MERGE_LIMIT bytes. Under back-pressure batch.size-sized batches pile up; one request
        carries one batch per partition, so sending them one by one would cap throughput at
        batch.size per round trip. Records are still encoded only once, at close(). Returns
        b's new size estimate."""
        # Also at most an eighth of buffer.memory: a merged batch is encoded (and copied into
        # its request) while its records still count against the pool.
        limit = min(MERGE_LIMIT, room, self.pool.total // 8)
        est = b.estimated_size()
        cap = self.max_records
        while dq:
            nxt = dq[0]
            if not _fresh(nxt) or est + nxt.size - BATCH_OVERHEAD > limit:
                break
            if cap is not None and len(b.keys) + len(nxt.keys) > cap:
                break
            dq.popleft()
            if self.open[nxt.topic][nxt.partition] is nxt:
                self.open[nxt.topic][nxt.partition] = None
                self._seal(nxt)
            b.absorb(nxt)
            self.incomplete.discard(nxt)
            est = b.estimated_size()
        return est

    def _split_records(self, b: ProducerBatch, dq) -> ProducerBatch:
        """b has more records than batch.num.messages: send its first max_records now and
        queue the rest, in order, at the front of its deque (lock held)."""
        children = split_records(b, self.max_records)
        dq.extendleft(reversed(children[1:]))
        self.incomplete.discard(b)
        self.incomplete.update(children)
        return children[0]

    def reenqueue(self, batch: ProducerBatch, now: float, backoff_s: float) -> None:
        """Put a batch back at the front of its deque for a retry (sequence order kept)."""
        batch.attempts += 1
        batch.retry_at = now + backoff_s
        batch.in_retry = True
        with self.lock:
            dq = self.deque_for(batch.topic, batch.partition)
            if batch.base_sequence >= 0:
                i = 0
                for other in dq:
                    if other.base_sequence < 0 or other.base_sequence > batch.base_sequence:
                        break
                    i += 1
                dq.insert(i, batch)
            else:
                dq.appendleft(batch)

    def requeue_split(self, old: ProducerBatch, new_batches: list) -> None:
        """Replace old (answered MESSAGE_TOO_LARGE) by smaller batches at the front."""
        with self.lock:
            dq = self.deque_for(old.topic, old.partition)
            for b in reversed(new_batches):
                dq.appendleft(b)
                self.incomplete.add(b)
            self.incomplete.discard(old)

    def deallocate(self, batch: ProducerBatch) -> None:
        # No accumulator lock: set.discard is atomic, and readers iterate over a snapshot.
        self.incomplete.discard(batch)
        if batch.reserved:
            self.pool.deallocate(batch.reserved)
            batch.reserved = 0

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Batches still queued after delivery.timeout.ms; removed from their deques."""
        out = []
        limit = self.delivery_timeout
        # A lock-free look first (the oldest batch of each deque is at its front).
        if not any(dq and now - dq[0].created >= limit
                   for parts in list(self.topics.values()) for dq in parts):
            return out
        with self.lock:
            for parts in self.topics.values():
                for dq in parts:
                    while dq and now - dq[0].created >= limit:
                        b = dq.popleft()
                        if self.open[b.topic][b.partition] is b:
                            self.open[b.topic][b.partition] = None
                            self._seal(b)
                        b.full = True
                        out.append(b)
        return out

    def queued_batches(self) -> list[ProducerBatch]:
        with self.lock:
            return [b for parts in self.topics.values() for dq in parts if dq for b in dq]

    def abort_undrained(self, error) -> list[ProducerBatch]:
        """Remove and return every queued batch (close without draining)."""
        with self.lock:
            for t in list(self.stages):
                self._flush_stage(t)
            out = []
            for parts in self.topics.values():
                for dq in parts:
                    if dq:
                        out.extend(dq)
                        dq.clear()
            for opened in self.open.values():
                for i, b in enumerate(opened):
                    if b is not None:
                        self._seal(b)
                        opened[i] = None
            return out

    def has_undrained(self) -> bool:
        with self.lock:
            return bool(self.stages) or any(dq for parts in self.topics.values()
                                            for dq in parts)

    def queue_sizes(self, topic: str) -> list[int]:
        parts = self.topics.get(topic) or []
        return [len(dq) if dq else 0 for dq in parts]

    # -- flush -------------------------------------------------------------------------------
    def begin_flush(self) -> None:
        with self.lock:
            self.flushes_in_progress += 1

    def end_flush(self) -> None:
        with self.lock:
            self.flushes_in_progress -= 1

    def await_flush(self, started: float, deadline: float | None) -> None:
        """Wait until every batch created at or before `started` is settled."""
        while True:
            pending = [b for b in tuple(self.incomplete) if b.created <= started]
            if not pending:
                return
            for b in pending:
                left = None if deadline is None else deadline - self.clock()
                if left is not None and left <= 0:
                    raise KafkaTimeoutError(
                        f"flush() timed out with {len(pending)} batches still unacknowledged")
                b.result.wait(left)
