"""The data source's only contact with the cluster, through gregor's own clients.

- `TopicMetadata`: on the driver, which partitions a subscription covers and their earliest /
  latest / by-timestamp offsets.
- `read_range`: on an executor, the records [start, end) of one partition as Arrow batches.
- `RecordWriter`: on an executor, one idempotent producer per task fed from Arrow batches.
"""
from __future__ import annotations

import logging
import time
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import pool
from .arrow import HEADER_TYPE, arrow_read_schema, build_batch, sink_columns
from .kafka_params import admin_params, consumer_params, producer_params
from .offsets import DataLossError, OffsetRange, Offsets, TopicPartition
from .options import OptionError, Subscription

log = logging.getLogger("gregor.spark")

# Bytes per partition per fetch: larger than the consumer's 1 MiB default so a task moves its
# range in few round trips; bounded so a task's buffered fetch stays small next to Spark's memory.
FETCH_PARTITION_BYTES = 8 * 1024 * 1024
# A task reads a planned range, whose records exist, so a fetch never needs to long-poll. With
# the consumer's 500 ms default, the prefetch a task leaves in flight at the end of its range
# (at the log end, where the broker waits) held the worker's next task 500 ms behind it: the
# broker answers a connection's requests in order, and the pooled consumer moves between
# partitions. kafka.fetch.max.wait.ms still wins.
FETCH_MAX_WAIT_MS = 10


def consumer_config(config: dict, group_id: str | None = None) -> dict:
    """The source's consumer settings: the kafka.* options gregor's Consumer knows (the
    others are logged and dropped, see kafka_params) plus what the connector decides."""
    cfg = consumer_params(config)
    if group_id:
        cfg.setdefault("group.id", group_id)   # kafka.group.id wins, as in Spark
    cfg["enable.auto.commit"] = False  # progress lives in Spark's checkpoint
    cfg.setdefault("auto.offset.reset", "none")  # a vanished offset must surface, not be papered over
    cfg.setdefault("max.partition.fetch.bytes", FETCH_PARTITION_BYTES)
    cfg.setdefault("fetch.max.wait.ms", FETCH_MAX_WAIT_MS)
    return cfg


def _consumer(config: dict, group_id: str | None = None):
    from gregor.client.consumer import Consumer
    return Consumer(consumer_config(config, group_id))


def _admin(config: dict):
    """An AdminClient given only the keys it knows (the source's kafka.* options may hold
    consumer settings, which the admin client would reject as unknown)."""
    from gregor.client.admin import AdminClient
    return AdminClient(admin_params(config))


def check_subscribed_topics(options) -> None:
    """At load(): the topics a `subscribe` or `assign` read names exist (tried as the offset
    queries are, fetchOffset.numRetries times: a topic may be being created). A pattern may
    match nothing yet, as in Spark."""
    from .options import (DEFAULT_FETCH_OFFSET_RETRIES, DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS,
                          _int, client_config, parse_subscription)
    subscription = parse_subscription(options)
    if subscription.kind == "subscribePattern":
        return
    meta = TopicMetadata(client_config(options),
                         attempts=_int(options, "fetchOffset.numRetries",
                                       DEFAULT_FETCH_OFFSET_RETRIES, 1),
                         retry_interval_ms=_int(options, "fetchOffset.retryIntervalMs",
                                                DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS, 0))
    try:
        meta.partitions(subscription, required=True)
    finally:
        meta.close()


class TopicMetadata:
    """Driver-side metadata and offset queries (one consumer and one admin client, reused
    across micro-batches).

    Every query is tried up to `attempts` times (fetchOffset.numRetries), pausing
    `retry_interval_ms` (fetchOffset.retryIntervalMs) and reopening the clients after a
    failure, as Spark's KafkaOffsetReaderAdmin.withRetries: a topic being created, a leader
    moving or a broker restarting does not fail the query at once."""

    def __init__(self, config: dict, *, group_id: str | None = None, attempts: int = 1,
                 retry_interval_ms: int = 0):
        self._config = config
        self._group_id = group_id
        self._attempts = max(1, attempts)
        self._interval_s = retry_interval_ms / 1000
        self._consumer_ = None
        self._admin_ = None
        self._answered = False      # a query succeeded once: the cluster was reachable

    @property
    def _consumer(self):
        if self._consumer_ is None:
            self._consumer_ = _consumer(self._config, self._group_id)
        return self._consumer_

    @property
    def _admin(self):
        if self._admin_ is None:
            self._admin_ = _admin(self._config)
        return self._admin_

    def _with_retries(self, what: str, body):
        from gregor.client.errors import BrokerNotReachableError
        for attempt in range(1, self._attempts + 1):
            try:
                out = body()
                self._answered = True
                return out
            except Exception as e:
                # nothing ever listened at bootstrap.servers: retrying only delays the answer
                # (a broker that answered before and restarts is retried, as Spark does)
                if attempt >= self._attempts or (isinstance(e, BrokerNotReachableError)
                                                 and not self._answered):
                    raise
                log.warning("attempt %d of %d to %s failed (%s); retrying in %d ms "
                            "(fetchOffset.numRetries / fetchOffset.retryIntervalMs)",
                            attempt, self._attempts, what, e, self._interval_s * 1000)
                time.sleep(self._interval_s)
                self.close()   # fresh clients for the next attempt, as Spark resets its admin

    def partitions(self, subscription: Subscription, *, required: bool = False) -> list[TopicPartition]:
        """The partitions a subscription covers now. `required`: none at all is an error
        (retried: the topic may be being created)."""
        def body():
            if subscription.kind == "assign":
                out = list(subscription.assigned)
                if required:         # each assigned topic must exist (load()'s check)
                    existing = self._admin.list_topics()
                    missing = sorted({t for t, _ in out if t not in existing})
                    if missing:
                        raise OptionError(f"no partitions found for {', '.join(missing)}: "
                                          "the topic does not exist; create it first "
                                          "(gregor topics create ...) or check the name")
            else:
                out = sorted((name, p.partition) for name, desc in self._admin.list_topics().items()
                             if subscription.matches(name) for p in desc.partitions)
            if required and not out:
                names = ", ".join(subscription.topics) or "the assigned topics"
                raise OptionError(f"no partitions found for {names}; create the topic first "
                                  "(gregor topics create ...) or check the name")
            return out
        return self._with_retries("list the subscribed partitions", body)

    def earliest(self, tps: list[TopicPartition]) -> Offsets:
        if not tps:
            return {}
        return self._with_retries("fetch earliest offsets",
                                  lambda: dict(self._consumer.beginning_offsets(list(tps))))

    def latest(self, tps: list[TopicPartition], known: Offsets | None = None) -> Offsets:
        """Latest offsets. With `known` (offsets the query already reached), a latest offset
        below a known one is asked again (up to the attempts) before it is believed: a
        follower that just became leader can answer with a stale end (KAFKA-7703; Spark's
        fetchLatestOffsets does the same)."""
        if not tps:
            return {}
        got = {}
        for attempt in range(1, self._attempts + 1):
            got = self._with_retries("fetch latest offsets",
                                     lambda: dict(self._consumer.end_offsets(list(tps))))
            behind = [tp for tp in got if known and tp in known and got[tp] < known[tp]]
            if not behind or attempt >= self._attempts:
                return got
            log.warning("latest offsets below those already read for %s; asking again", behind)
            time.sleep(self._interval_s)
        return got

    def offsets_for_times(self, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        found = self._with_retries("fetch offsets for timestamps",
                                   lambda: self._consumer.offsets_for_times(dict(wanted)))
        out = {}
        for tp in wanted:
            hit = found.get(tp)
            out[tp] = None if hit is None else int(getattr(hit, "offset", hit))
        return out

    def close(self) -> None:
        consumer, admin, self._consumer_, self._admin_ = self._consumer_, self._admin_, None, None
        try:
            if consumer is not None:
                consumer.close()
        finally:
            if admin is not None:
                admin.close()


def read_range(config: dict, rng: OffsetRange, *, include_headers: bool, fail_on_data_loss: bool,
               poll_timeout_ms: int, group_id: str | None = None) -> Iterator[pa.RecordBatch]:
    """Yield the records of `rng` as Arrow batches, one per fetched chunk of the partition,
    built from the consumer's columns (no per-record Python objects).

    Offsets below the partition's start (deleted since planning) are data loss: raised, or
    skipped with a warning. Gaps inside the range (compaction, transaction markers) are normal."""
    from gregor.client.consumer import Consumer
    from gregor.protocol.errors import OffsetOutOfRangeError
    cfg = consumer_config(config, group_id)
    key = pool.config_key(cfg)
    consumer = pool.consumers().borrow(key, lambda: Consumer(cfg))
    healthy = False
    tp = (rng.topic, rng.partition)
    try:
        consumer.assign([(rng.topic, rng.partition, rng.start)])
        position = rng.start
        deadline = time.monotonic() + poll_timeout_ms / 1000
        while position < rng.end:
            try:
                # Arrow output: keys/values arrive as pyarrow arrays, never Python objects.
                chunks = consumer.poll_batches(timeout=1.0, arrow=True)
            except OffsetOutOfRangeError:
                first = consumer.beginning_offsets([tp])[tp]
                if position >= first:
                    raise
                msg = (f"records {position}..{first - 1} of {rng.topic}-{rng.partition} were removed "
                       "(retention or delete-records) after the query planned to read them")
                if fail_on_data_loss:
                    raise DataLossError(msg + "; set failOnDataLoss=false to skip them with a warning") from None
                log.warning("%s; skipping to %d because failOnDataLoss=false", msg, first)
                position = first
                consumer.seek(rng.topic, rng.partition, position)
                continue
            got = False
            for pr in chunks:
                n = len(pr)
                if n == 0:
                    position = max(position, pr.next_offset)
                    continue
                got = True
                offsets = pr.offsets.to_numpy()  # int64 without nulls: zero-copy
                last = int(offsets[-1])
                if last >= rng.end:
                    n = int(np.searchsorted(offsets, rng.end))
                if n:
                    yield _arrow_batch(rng, pr.slice(0, n), include_headers)
                position = rng.end if n < len(pr) else max(pr.next_offset, last + 1)
            if got:
                deadline = time.monotonic() + poll_timeout_ms / 1000
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"no record of {rng.topic}-{rng.partition} arrived for {poll_timeout_ms} ms while "
                    f"reading offsets {position}..{rng.end - 1}; is the broker reachable? "
                    "(raise kafkaConsumer.pollTimeoutMs to wait longer)")
        consumer.unassign()
        healthy = True
    finally:
        # A consumer is reused by the worker's next task only after a clean read (pool.py).
        if healthy:
            pool.consumers().give_back(key, consumer)
        else:
            pool.consumers().discard(consumer)


def _arrow_batch(rng: OffsetRange, pr, include_headers: bool) -> pa.RecordBatch:
    """The read schema's RecordBatch from one ArrowRecords chunk (gregor.client.consumer):
    its arrays go in as they are; the headers column already has the read schema's type."""
    batch = build_batch(rng.topic, rng.partition, pr.offsets, pr.timestamps, pr.timestamp_types,
                        pr.keys, pr.values, include_headers=False)
    if not include_headers:
        return batch
    return pa.RecordBatch.from_arrays(batch.columns + [null_if_empty(pr.headers.cast(HEADER_TYPE))],
                                      schema=arrow_read_schema(True))


def null_if_empty(headers: pa.ListArray) -> pa.ListArray:
    """A record without headers has a null `headers` value in Spark's Kafka source (not an
    empty array): the list array again, with its empty entries marked null."""
    empty = pc.equal(pc.list_value_length(headers), 0)
    if not pc.any(empty).as_py():
        return headers
    return pa.ListArray.from_arrays(headers.offsets, headers.values, type=headers.type,
                                    mask=empty)


# Arrow data gathered before one round of send_batch calls: large enough that with 4
# partitions each gets the 8 MiB of records a compressed bulk batch can hold (bulk.py:
# MAX_BULK_UNCOMPRESSED; measured 0.37 -> 0.27 s of broker CPU per 5M rows against 8 MiB
# here); small enough to be a bounded buffer per Spark task.
COALESCE_BYTES = 32 << 20
SINK_COMPRESSION = "lz4"
# How long a failed task spends aborting its transaction and closing its producer: the task
# is failing anyway, and a broker that does not answer within this will not soon.
ABANDON_TIMEOUT_S = 10.0


class RecordWriter:
    """One idempotent gregor producer for one Spark task, fed through the producer's bulk path
    (send_batch: one call per topic and partition group of an Arrow batch, records encoded as
    whole batches). `close()` flushes and raises the first send error, so a task only reports
    success once every record is acknowledged."""

    def __init__(self, config: dict, topic_option: str | None, transactional: bool = False):
        from gregor.client.producer import Producer
        cfg = producer_params(config)
        # Idempotence is the producer's default (as Kafka 3.x's): retries never duplicate a
        # record. Left unset, so kafka.acks=1 (or 0) turns it off quietly, as Spark's
        # connector's Java producer does, instead of failing the task.
        # lz4 unless kafka.compression.type says otherwise (the producer's own default is
        # none): a sink moves bulk data, and with lz4 the broker receives and writes several
        # times fewer bytes; measured 1.6-1.8x the rows/s of an uncompressed write
        # (benchmarks/bench_spark.py). Every Kafka client reads lz4 batches transparently.
        cfg.setdefault("compression.type", SINK_COMPRESSION)
        self._transactional = transactional
        if transactional:
            self._producer = Producer(cfg)
        else:
            # An at-least-once task borrows the worker's producer for this configuration
            # (pool.py): no connection set-up or InitProducerId per task.
            self._pool_key = pool.config_key(cfg)
            self._producer = pool.producers().borrow(self._pool_key, lambda: Producer(cfg))
        self._topic_option = topic_option
        self._results = []
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        # Keyed rows of one topic, sorted into partitions as they arrive (partitioned.py);
        # the other rows wait in _pending. At most one of the two holds rows at a time (the
        # other is sent first), so each partition receives its rows in DataFrame order.
        from . import partitioned
        from ..client.producer import bulk
        self._by_partition = partitioned.borrow()
        self._by_partition_topic = None
        self._keyed_fast_path = bulk.ENCODE_IN_CALLER and self._producer._builtin \
            and not self._producer._ignore_keys
        if transactional:
            # Fences every earlier attempt of this task (their open transactions are aborted)
            self._producer.init_transactions()
            self._producer.begin_transaction()

    def write(self, batch: pa.RecordBatch) -> None:
        """Queue one Arrow batch; batches are sent together once COALESCE_BYTES have
        gathered (and at close): Spark hands over ~10,000 rows at a time, and the cost per
        produce request and per record batch (on both sides) is paid per call here."""
        if batch.num_rows == 0:
            return
        keyed = self._keyed(batch)
        rows = self._by_partition
        if keyed is not None:
            topic, keys, values = keyed
            if self._pending:
                self._send_pending()
            if rows.rows and (topic != self._by_partition_topic or not rows.takes(keys, values)
                              or rows.nbytes + batch.nbytes > COALESCE_BYTES):
                self._send_by_partition()
            if rows.takes(keys, values):
                self._by_partition_topic = topic
                rows.add(keys, values, len(self._producer.partitions_for(topic)))
                if rows.nbytes >= COALESCE_BYTES:
                    self._send_by_partition()
                return
        if rows.rows:
            self._send_by_partition()
        self._pending.append(batch)
        self._pending_bytes += batch.nbytes
        if self._pending_bytes >= COALESCE_BYTES:
            self._send_pending()

    def _keyed(self, batch: pa.RecordBatch):
        """(topic, keys, values) when every row of the batch is partitioned by its key alone
        into one topic (the fast path: partitioned.py); else None."""
        if not self._keyed_fast_path:
            return None
        value, key, topic, partition, headers = sink_columns(batch)
        if value is None or key is None or key.null_count or value.null_count:
            return None
        if partition is not None and partition.null_count != len(partition):
            return None
        if _has_headers(headers):
            return None
        name = self._topic_option
        if name is None:
            if topic is None or topic.null_count:
                return None
            names = pc.unique(topic)
            if len(names) != 1:
                return None
            name = names[0].as_py()
        return name, key, value

    def _send_pending(self) -> None:
        if self._by_partition is not None and self._by_partition.rows:
            self._send_by_partition()
        if not self._pending:
            return
        batches, self._pending, self._pending_bytes = self._pending, [], 0
        self._send(batches[0] if len(batches) == 1 else pa.concat_batches(batches))

    def _send_by_partition(self) -> None:
        """Send the keyed rows gathered per partition; send_batch has encoded them (its
        encoder runs in this thread) when it returns, so the buffers are free again."""
        rows = self._by_partition
        try:
            for p, keys, values in rows.partitions():
                self._results.append(self._producer.send_batch(
                    self._by_partition_topic, values, keys=keys, partition=p))
            self.rows += rows.rows
        finally:
            rows.reset()

    def _send(self, batch: pa.RecordBatch) -> None:
        value, key, topic, partition, headers = sink_columns(batch)
        n = batch.num_rows
        if n == 0:
            return
        if self._topic_option is None and topic.null_count:
            raise ValueError("a row has a null 'topic' and no 'topic' option is set; fill the column "
                             "or set the option")
        if partition is not None and partition.null_count == n:
            partition = None
        header_lists = None
        if _has_headers(headers):
            header_lists = [[(h["key"], h["value"]) for h in row] if row else []
                            for row in headers.to_pylist()]
        for t, p, idx in _groups(self._topic_option, topic, partition, n):
            take = (lambda a: a) if idx is None else (lambda a: a.take(idx))
            hdrs = header_lists if idx is None or header_lists is None else \
                [header_lists[i] for i in idx.to_pylist()]
            self._results.append(self._producer.send_batch(
                t, take(value), keys=None if key is None else take(key), partition=p, headers=hdrs))
        self.rows += n

    def prepare(self, progress: dict, group: str) -> tuple[int, int]:
        """Exactly-once sink: send everything and the progress offsets inside the transaction,
        then close the producer leaving the transaction open for the driver to commit.
        Returns the transaction's (producer id, epoch)."""
        try:
            self._send_pending()
            self._producer.flush()
            for r in self._results:
                r.result()
            self._producer.send_offsets_to_transaction(progress, group)
        except BaseException:
            self.abandon()
            raise
        self._give_back_rows()
        txn = self._producer._txn
        self._producer.close()
        return txn.producer_id, txn.producer_epoch

    def abandon(self) -> None:
        """A failed task: abort its transaction (best effort, bounded) so read_committed
        readers need not wait for the broker to time it out, then close without raising
        (the task's own error is the one to report). A transaction this cannot abort is
        aborted by the next attempt's InitProducerId, or times out."""
        self._give_back_rows()
        try:
            if self._transactional:
                self._producer.abort_transaction(ABANDON_TIMEOUT_S)
        except Exception as e:
            log.info("gregor sink: could not abort the failed task's transaction: %s", e)
        try:
            self._producer.close(ABANDON_TIMEOUT_S)   # never back to the pool
        except Exception:
            pass

    def _give_back_rows(self) -> None:
        if self._by_partition is not None:
            from . import partitioned
            partitioned.give_back(self._by_partition)
            self._by_partition = None

    def close(self) -> int:
        """Flush, surface the first failure, and give the producer back to the pool (or close
        it: transactional, or anything failed). Returns rows written."""
        healthy = False
        try:
            self._send_pending()
            self._producer.flush()
            for r in self._results:
                r.result()
            healthy = True
        finally:
            self._results = []
            self._give_back_rows()
            if healthy and not self._transactional:
                pool.producers().give_back(self._pool_key, self._producer)
            elif self._transactional:
                self._producer.close()
            else:
                pool.producers().discard(self._producer)
        return self.rows


def _has_headers(headers) -> bool:
    """Whether any row of a sink batch's `headers` column (None: no such column) has one."""
    return headers is not None and (pc.sum(pc.list_value_length(headers)).as_py() or 0) > 0


def _groups(topic_option, topic, partition, n):
    """(topic, partition or None, row indices or None for all rows) of a sink batch; rows keep
    their order within a group, so a partition receives records in DataFrame order."""
    topics = [topic_option] if topic_option is not None else pc.unique(topic).to_pylist()
    parts = [None] if partition is None else pc.unique(partition).to_pylist()
    if len(topics) == 1 and len(parts) == 1:
        return [(topics[0], parts[0], None)]
    out = []
    for t in topics:
        for p in parts:
            masks = []
            if topic_option is None:
                masks.append(pc.equal(topic, t))
            if partition is not None:
                masks.append(pc.is_null(partition) if p is None else pc.equal(partition, p))
            mask = masks[0] if len(masks) == 1 else pc.and_(masks[0], masks[1])
            idx = pc.indices_nonzero(mask.fill_null(False))
            if len(idx):
                out.append((t, p, idx))
    return out
