"""Producer: the public, thread-safe producer (Kafka's Java producer architecture).

send() -> interceptors -> serializers -> partitioner -> RecordAccumulator; a Sender thread
drains batches to the brokers. send() is the hot path: it does no per-record locking beyond the
accumulator's one lock, keeps lookups in locals, and wakes the sender only when a batch opens.
"""
from __future__ import annotations

import logging
import numbers
import operator
import threading
import time

from ...protocol.errors import ErrorCode, error_for_code
from ..errors import ConfigError, KafkaTimeoutError, ProducerClosedError
from ..metadata import Metadata
from ..network import NetworkClient
from .accumulator import BATCH_OVERHEAD, RecordAccumulator, estimate_record_size
from .availability import NodeAvailability
from .batch import (TIMESTAMP_LIMIT, FutureRecordMetadata, ProducerBatch,  # noqa: F401
                    RecordMetadata)
from .buffer_pool import BufferPool
from .fastpath import FastLock, FastSend
from .idempotence import IdempotenceManager
from .transactions import TransactionManager
from .txn_api import TransactionalMethods
from .metrics import ProducerMetrics
from .partitioners import BuiltInPartitioner, partitioner_from_config
from .sender import Sender
from .settings import producer_config

log = logging.getLogger("gregor.client.producer")
# Record timestamps are taken as float milliseconds (time.time() * 1000.0): ~80 ns a record
# cheaper than int(time.time_ns() // 1000000), whose big-int division allocates twice. The
# batch turns them into int milliseconds (floor) when it encodes (ProducerBatch.close), and
# RecordMetadata reports the same floor.
_time = time.time


def _instantiate(obj, what: str):
    if isinstance(obj, str):
        import importlib
        mod, _, attr = obj.replace(":", ".").rpartition(".")
        try:
            obj = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError, ValueError) as e:
            raise ConfigError(f"config {what!r}: cannot import {obj!r}: {e}") from None
    if isinstance(obj, type):
        obj = obj()
    return obj


def _serializer(obj, key: str):
    """A function(topic, data) -> bytes from a serializer object or callable."""
    if obj is None:
        return None
    obj = _instantiate(obj, key)
    bind = getattr(obj, "bind_field", None)     # gregor.serde: the key's subject differs
    if callable(bind):
        obj = bind("key" if key.startswith("key") else "value")
    ser = getattr(obj, "serialize", None)
    if callable(ser):
        return ser
    if callable(obj):
        return lambda topic, data: obj(data)
    raise ConfigError(f"config {key!r}: {obj!r} is neither callable nor has serialize()")


def _to_bytes(x, what: str):
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, str):
        return x.encode("utf-8")
    raise TypeError(f"record {what} must be bytes (or str) when no {what}.serializer is set, "
                    f"got {type(x).__name__}; set {what}.serializer or encode it yourself")


def _check_timestamp(ts):
    """ts as an int or float (float milliseconds are truncated when the batch is encoded),
    or a clear error before anything is queued."""
    if not isinstance(ts, (int, float)):
        try:
            ts = operator.index(ts)  # numpy integers and the like
        except TypeError:
            if not isinstance(ts, numbers.Real):
                raise TypeError(f"timestamp_ms must be an int (milliseconds since the epoch) "
                                f"or None for now, got {type(ts).__name__}") from None
            ts = float(ts)
    if not -TIMESTAMP_LIMIT < ts < TIMESTAMP_LIMIT:
        raise ValueError(f"timestamp_ms={ts} is out of range: gregor takes timestamps below "
                         f"2**53 ms (the year 287,396); pass milliseconds, not micro- or "
                         "nanoseconds")
    return ts


class Producer(TransactionalMethods):
    """Kafka producer. Config as a dict with Kafka's names and/or python keywords:
    `Producer({"bootstrap.servers": "127.0.0.1:9092"}, linger_ms=5)`."""

    def __init__(self, config: dict | None = None, *, _network=None, _clock=None,
                 _start=True, **kwargs):
        cfg = producer_config(config, kwargs)
        self.config = cfg
        clock = _clock or time.monotonic
        self._clock = clock
        # Everything that can refuse the config comes before the first socket.
        self._partitioner = partitioner_from_config(cfg)
        self._sticky = bool(getattr(self._partitioner, "sticky", False))
        if cfg["partitioner.ignore.keys"] and not self._sticky:
            raise ConfigError("config 'partitioner.ignore.keys' only applies to the default "
                              "partitioner; remove it or 'partitioner'/'partitioner.class'")
        self._ignore_keys = cfg["partitioner.ignore.keys"]
        self._key_ser = _serializer(cfg["key.serializer"], "key.serializer")
        self._value_ser = _serializer(cfg["value.serializer"], "value.serializer")
        self._interceptors = [_instantiate(i, "interceptor.classes")
                              for i in cfg["interceptor.classes"]]
        self._metadata = Metadata(cfg["metadata.max.age.ms"], allow_auto_topic_creation=True,
                                  idle_ms=cfg["metadata.max.idle.ms"])
        self._network = _network or NetworkClient(cfg, metadata=self._metadata, clock=clock)
        self._metadata = self._network.metadata
        self._pool = BufferPool(cfg["buffer.memory"], clock=clock)
        self._pool.on_wait = self._network.wakeup
        self._acc = RecordAccumulator(
            # A batch never outgrows one request: the fast path then needs no size check
            # beyond the batch's own.
            batch_size=min(cfg["batch.size"], cfg["max.request.size"]),
            linger_s=cfg["linger.ms"] / 1000.0, compression=cfg["compression.codec"],
            pool=self._pool, delivery_timeout_s=cfg["delivery.timeout.ms"] / 1000.0,
            clock=clock, max_records=cfg["batch.num.messages"])
        tid = cfg["transactional.id"]
        self._txn = (TransactionManager(tid, cfg["transaction.timeout.ms"]) if tid is not None
                     else IdempotenceManager() if cfg["enable.idempotence"] else None)
        self._acc.txn = self._txn
        self._metrics = ProducerMetrics(clock)
        self._sender = Sender(cfg, self._network, self._acc, self._metrics, txn=self._txn,
                              clock=clock)
        self._acc.interceptors = self._interceptors or None
        self._max_block = cfg["max.block.ms"] / 1000.0
        self._max_request_size = cfg["max.request.size"]
        self._total_memory = cfg["buffer.memory"]
        # send_batch: per topic, the compressed / uncompressed size its batches came out at
        self._bulk_ratios: dict[str, float] = {}
        self._closed = False
        self._close_lock = threading.Lock()
        self._nparts: dict[str, int] = {}
        self._avail: dict[str, list[int]] = {}
        # topic -> (partition count, the accumulator's open-batch list, available partitions)
        # for send()'s fast path; only filled when records need no serializer/interceptor.
        self._fast: dict[str, tuple] = {}
        self._sticky_state: dict[str, list] = {}  # topic -> [partition, bytes since boundary]
        self._builtin = isinstance(self._partitioner, BuiltInPartitioner)
        # partitioner.availability.timeout.ms (see availability.py). As in Java, only the
        # built-in partitioner with adaptive partitioning uses it: with
        # partitioner.adaptive.partitioning.enable=false (or another partitioner) it is ignored.
        avail_ms = cfg["partitioner.availability.timeout.ms"]
        if avail_ms > 0 and self._builtin and self._partitioner.adaptive:
            self._acc.node_availability = NodeAvailability(avail_ms / 1000.0)
        # Keyed records may be staged and hashed in bulk only when that is exactly Java's
        # default partitioning (see staging.py) and they fit a batch (larger ones go alone).
        self._stage_keyed = self._builtin and not self._ignore_keys
        self._stage_max = self._acc.batch_size - BATCH_OVERHEAD - 64
        self._plain = not (self._interceptors or self._key_ser or self._value_ser)
        self._acc_lock = self._acc.lock
        self._stages = self._acc.stages
        self._metadata.listeners.append(self._on_metadata)
        fast = None
        if FastSend is not None and isinstance(self._acc_lock, FastLock):
            # The compiled fast path (_fastpath.pyx): the Python send() below stays the
            # reference it falls back to for anything off the common path.
            fast = FastSend(self, self._py_send, FutureRecordMetadata, ProducerBatch).send
            self.send = self.produce = fast
        if tid is not None:
            self._init_transactional_send(fast or self._py_send)
        if _start:
            self._sender.start(f"gregor-producer-network-thread | {cfg['client.id']}")

    # -- send ----------------------------------------------------------------------------------
    def send(self, topic: str, value=None, key=None, headers=None, partition=None,
             timestamp_ms=None, callback=None):
        """Queue one record; returns a Future whose result() is RecordMetadata."""
        # Fast path: bytes in, no headers, topic known, room in the partition's open batch.
        # Everything else (serializers, interceptors, headers, a new batch, an unknown topic)
        # goes through _send. Each attribute read or call here costs ~10-50 ns a record
        # (benchmarks/bench_producer_send.py): keep it short.
        st = self._fast.get(topic)
        if st is None or headers is not None or (value is not None and type(value) is not bytes) \
                or (key is not None and type(key) is not bytes) or (timestamp_ms is not None and (
                    type(timestamp_ms) is not int or not 0 <= timestamp_ms < TIMESTAMP_LIMIT)):
            return self._send(topic, value, key, headers, partition, timestamp_ms, callback)
        n, opened, avail = st
        if partition is not None:
            p = partition
            if not 0 <= p < n:
                return self._send(topic, value, key, headers, partition, timestamp_ms, callback)
        elif n == 1:
            p = 0  # every partitioner's only choice
        elif key is None:
            if not self._builtin:
                p = self._partitioner(topic, key, value, n, avail)
            else:
                ss = self._sticky_state.get(topic)
                if ss is None:
                    return self._send(topic, value, key, None, None, timestamp_ms, callback)
                p = ss[0]
                if p >= n:  # the topic shrank (recreated): _send picks again
                    return self._send(topic, value, key, None, None, timestamp_ms, callback)
                ss[1] += (len(value) if value is not None else 0) + 12
        elif self._stage_keyed and (rec := len(key) + (
                len(value) if value is not None else 0)) < self._stage_max:
            # Keyed, several partitions, default partitioner: hash later, many at once
            # (staging.py). The common case is inlined; stage_append does the rest.
            if timestamp_ms is None:
                timestamp_ms = _time() * 1000.0
            lock = self._acc_lock
            lock.acquire()
            stg = self._stages.get(topic)
            if stg is not None and stg.n == n:
                size = stg.size + rec + 12
                if size <= stg.capacity:
                    stg.size = size
                    keys = stg.keys
                    i = len(keys)
                    keys.append(key)
                    stg.values.append(value)
                    stg.timestamps.append(timestamp_ms)
                    if callback is not None:
                        if stg.callbacks is None:
                            stg.callbacks = []
                        stg.callbacks.append((i, callback))
                    lock.release()
                    fut = FutureRecordMetadata()
                    fut._result = stg.result
                    fut._index = i
                    return fut
            lock.release()
            fut, stage = self._acc.stage_append(topic, n, timestamp_ms, key, value,
                                                callback, self._max_block)
            if stage is not None:
                sender = self._sender
                if sender.idle_until > stage.created + sender.linger:
                    self._network.wakeup()
            return fut
        else:
            p = self._partitioner(topic, key, value, n, avail)
            if not 0 <= p < n:
                return self._send(topic, value, key, headers, partition, timestamp_ms, callback)
        if timestamp_ms is None:
            timestamp_ms = _time() * 1000.0
        lock = self._acc_lock
        lock.acquire()
        b = opened[p]
        if b is not None and not (self._stages and topic in self._stages):
            size = b.size + 12
            if key is not None:
                size += len(key)
            if value is not None:
                size += len(value)
            if size <= b.max_bytes:
                b.size = size
                keys = b.keys
                i = len(keys)
                keys.append(key)
                b.values.append(value)
                b.timestamps.append(timestamp_ms)
                if b.headers is not None:
                    b.headers.append(None)
                if callback is not None:
                    if b.callbacks is None:
                        b.callbacks = []
                    b.callbacks.append((i, callback))
                lock.release()
                fut = FutureRecordMetadata()
                fut._result = b.result
                fut._index = i
                return fut
        lock.release()
        return self._send(topic, value, key, None, p, timestamp_ms, callback, partition is None)

    produce = _py_send = send

    def _send(self, topic, value, key, headers, partition, timestamp_ms, callback,
              chosen=None):
        if self._closed:
            raise ProducerClosedError(f"send() to {topic!r} after close(): the producer is "
                                      "closed; create a new one")
        if self._interceptors:
            topic, value, key, headers, partition, timestamp_ms = self._on_send(
                topic, value, key, headers, partition, timestamp_ms)
        try:
            if self._key_ser is not None:
                key = self._serialize(self._key_ser, "key.serializer", topic, key)
            if self._value_ser is not None:
                value = self._serialize(self._value_ser, "value.serializer", topic, value)
            if key is not None and type(key) is not bytes:
                key = _to_bytes(key, "key")
            if value is not None and type(value) is not bytes:
                value = _to_bytes(value, "value")
            if headers is not None:
                headers = self._check_headers(headers)
            if timestamp_ms is not None:
                timestamp_ms = _check_timestamp(timestamp_ms)
            n = self._nparts.get(topic)
            deadline = None
            if n is not None and self._plain and topic not in self._fast:
                self._fast[topic] = (n, self._acc.ensure_topic(topic, n), self._avail[topic])
            if n is None or (partition is not None and partition >= n):
                deadline = self._clock() + self._max_block
                n = self._wait_on_metadata(topic, partition, deadline)
            self._check_size(topic, key, value, headers)
            if chosen is None:
                chosen = partition is None
            if partition is None:
                partition = self._choose_partition(topic, key, value, n)
            elif not 0 <= partition < n:
                raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                     f"partition {partition} of topic {topic!r} does not exist "
                                     f"(the topic has {n} partitions)")
            if timestamp_ms is None:
                timestamp_ms = _time() * 1000.0
            block = self._max_block if deadline is None else max(0.0, deadline - self._clock())
            sticky = chosen and self._sticky and (key is None or self._ignore_keys)
            # A sticky partition must see its batch boundaries (it switches there), so its
            # open batch may not grow past batch.size.
            fut, new_batch = self._acc.append(topic, partition, timestamp_ms, key, value,
                                              headers, callback, block, may_grow=not sticky)
            if new_batch is not None:
                if sticky:
                    self._sticky_boundary(topic, partition, n)
                sender = self._sender
                if sender.idle_until > new_batch.created + sender.linger:
                    self._network.wakeup()
            return fut
        except Exception as e:
            if self._interceptors:
                for ic in self._interceptors:
                    fn = getattr(ic, "on_send_error", None)
                    if fn is not None:
                        try:
                            fn(topic, e)
                        except Exception:
                            log.exception("interceptor %r on_send_error raised", ic)
            raise

    def _choose_partition(self, topic, key, value, n):
        avail = self._avail.get(topic)
        if avail is None:
            avail = self._avail[topic] = self._metadata.available_partitions(topic)
        if key is None and self._builtin:
            st = self._sticky_state.get(topic)
            if st is None or st[0] >= n:
                if self._acc.node_availability is not None:
                    # Also the first draw of a topic avoids unavailable nodes.
                    self._update_load_stats(topic, n)
                st = self._sticky_state[topic] = [
                    self._partitioner(topic, None, value, n, avail), 0]
            st[1] += (len(value) if value is not None else 0) + 12
            return st[0]
        return self._partitioner(topic, key, value, n, avail)

    def _sticky_boundary(self, topic, partition, n):
        """A batch opened on a sticky partition: tell the partitioner what went there (Java's
        built-in partitioner switches only at batch boundaries) and refresh its load view."""
        part = self._partitioner
        self._update_load_stats(topic, n)
        if self._builtin:
            st = self._sticky_state.get(topic)
            if st is not None and st[0] == partition:
                part.on_append(topic, partition, st[1], True)
                st[1] = 0
                # Ask the partitioner again on the next record (it may have switched).
                self._sticky_state.pop(topic, None)
        else:
            part.on_append(topic, partition, self._acc.batch_size, True)

    def _update_load_stats(self, topic, n):
        """Queue sizes of the partitions the partitioner may draw from; without those of
        nodes past partitioner.availability.timeout.ms (availability.py)."""
        avail = self._avail.get(topic) or list(range(n))
        sizes = self._acc.queue_sizes(topic)
        if self._acc.node_availability is not None:
            avail = self._acc.node_availability.usable(topic, avail, sizes, self._metadata)
        self._partitioner.update_load_stats(
            topic, [sizes[i] if i < len(sizes) else 0 for i in avail], avail, n)

    def _on_metadata(self):
        """Metadata changed: drop the per-topic caches the fast path reads (cleared in place:
        the compiled send() holds this dict)."""
        self._fast.clear()
        self._nparts = {}
        self._avail = {}

    def _on_send(self, topic, value, key, headers, partition, timestamp_ms):
        from .interceptors import ProducerRecord
        rec = ProducerRecord(topic, partition, key, value, headers, timestamp_ms)
        for ic in self._interceptors:
            fn = getattr(ic, "on_send", None)
            if fn is None:
                continue
            try:
                out = fn(rec)
                if out is not None:
                    rec = out
            except Exception:
                log.exception("interceptor %r on_send raised; record sent unchanged", ic)
        return rec.topic, rec.value, rec.key, rec.headers, rec.partition, rec.timestamp_ms

    @staticmethod
    def _serialize(ser, keyname, topic, data):
        try:
            return ser(topic, data)
        except Exception as e:
            raise ValueError(f"{keyname} failed on {type(data).__name__} for topic "
                             f"{topic!r}: {e}") from e

    @staticmethod
    def _check_headers(headers):
        if isinstance(headers, dict):
            headers = list(headers.items())
        out = []
        for h in headers:
            k, v = h
            if not isinstance(k, str):
                k = k.decode("utf-8") if isinstance(k, (bytes, bytearray)) else str(k)
            if v is not None and type(v) is not bytes:
                v = _to_bytes(v, "header value")
            out.append((k, v))
        return out

    def _check_size(self, topic, key, value, headers):
        size = estimate_record_size(key, value, headers) + BATCH_OVERHEAD
        if size > self._max_request_size:
            raise error_for_code(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"record for {topic!r} is about {size} bytes, larger than "
                                 f"max.request.size={self._max_request_size}; raise "
                                 "max.request.size (and the broker's message.max.bytes)")
        if size > self._total_memory:
            raise error_for_code(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"record for {topic!r} is about {size} bytes, larger than "
                                 f"buffer.memory={self._total_memory}; raise buffer.memory")

    def _wait_on_metadata(self, topic: str, partition, deadline: float) -> int:
        md = self._metadata
        md.add_topic(topic)
        md.touch(topic, self._clock())
        while True:
            n = md.partition_count(topic)
            if n is not None and (partition is None or partition < n):
                avail = self._avail[topic] = md.available_partitions(topic)
                self._nparts[topic] = n
                if self._plain:
                    self._fast[topic] = (n, self._acc.ensure_topic(topic, n), avail)
                return n
            fatal = self._sender.fatal_error or (self._txn.fatal_error if self._txn else None) \
                or self._network.authentication_failure() \
                or self._network.unreachable_error()           # TLS / SASL refused; no broker
            if fatal is not None:
                raise fatal
            version = md.version
            md.request_update()
            self._network.wakeup()
            left = deadline - self._clock()
            if left <= 0:
                err = md.topic_error(topic)
                why = f" (broker says {err.name})" if err is not None else ""
                if n is not None:
                    raise KafkaTimeoutError(
                        f"partition {partition} of topic {topic!r} not present in metadata "
                        f"after max.block.ms={int(self._max_block * 1000)}: the topic has {n}")
                raise KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after max.block.ms="
                    f"{int(self._max_block * 1000)}{why}; create the topic (or enable "
                    "auto.create.topics.enable on the broker) and check bootstrap.servers")
            md.wait_for_version(version, min(left, 0.25))

    # -- bulk ----------------------------------------------------------------------------------
    def send_batch(self, topic: str, values, keys=None, partition=None, timestamps=None,
                   headers=None):
        """Bulk path: many records encoded as whole batches. See bulk.py."""
        from .bulk import send_batch
        if self._txn is not None and self._txn.transactional:
            self._txn.check_can_send()
        return send_batch(self, topic, values, keys, partition, timestamps, headers)

    # -- lifecycle -----------------------------------------------------------------------------
    def send_open_batches(self) -> None:
        """Send what is queued without waiting for linger.ms, and without waiting for the
        answers (flush() waits). For facades that bound batches by message count."""
        self._acc.seal_open()
        self._network.wakeup()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent before this call is acknowledged or failed."""
        started = self._clock()
        deadline = None if timeout is None else started + timeout
        self._acc.flush_stages()  # staged records become batches created before `started`
        self._acc.begin_flush()
        self._network.wakeup()
        try:
            self._acc.await_flush(started, deadline)
        finally:
            self._acc.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued, then stop. With a timeout, records still pending when it
        passes are failed and close() returns within the timeout."""
        with self._close_lock:
            first = not self._closed
            self._closed = True
        sender = self._sender
        if first:
            self._acc.closed = True
            # The compiled send() holds the producer: dropping it ends that cycle, and later
            # calls meet the Python path's "closed" error.
            vars(self).pop("send", None)
            vars(self).pop("produce", None)
            sender.initiate_close()
        thread = sender.thread
        if thread is None:
            return
        if thread is threading.current_thread():
            # close() from a callback: the sender cannot wait for itself. Like Kafka's
            # producer, fail what is pending instead of deadlocking.
            sender.force()
            self._pool.close()
            return
        if timeout is None:
            thread.join()
        else:
            deadline = self._clock() + max(0.0, timeout)
            # Leave a little of the budget for the forced abort.
            thread.join(max(0.0, timeout - min(0.1, timeout / 4)))
            if thread.is_alive():
                sender.force()
                self._pool.close()
                thread.join(max(0.0, deadline - self._clock()))
        self._pool.close()
        self._partitioner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self._closed and self._sender.thread is not None:
                self.close(0)
        except Exception:
            pass

    # -- info ----------------------------------------------------------------------------------
    def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        deadline = self._clock() + (self._max_block if timeout is None else timeout)
        self._wait_on_metadata(topic, None, deadline)
        return self._metadata.partitions_for(topic)

    def metrics(self) -> dict:
        return self._metrics.snapshot(self._pool, self._network)

    @property
    def bootstrap_connected(self) -> bool:
        return bool(self._metadata.brokers)
