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

from .arrow import HEADER_TYPE, arrow_read_schema, build_batch, sink_columns
from .offsets import DataLossError, OffsetRange, Offsets, TopicPartition
from .options import Subscription

log = logging.getLogger("gregor.spark")

# Bytes per partition per fetch: larger than the consumer's 1 MiB default so a task moves its
# range in few round trips; bounded so a task's buffered fetch stays small next to Spark's memory.
FETCH_PARTITION_BYTES = 8 * 1024 * 1024


def _consumer(config: dict):
    from gregor.client.consumer import Consumer
    cfg = dict(config)
    cfg.setdefault("enable.auto.commit", False)  # progress lives in Spark's checkpoint
    cfg.setdefault("auto.offset.reset", "none")  # a vanished offset must surface, not be papered over
    cfg.setdefault("max.partition.fetch.bytes", FETCH_PARTITION_BYTES)
    return Consumer(cfg)


def _admin(config: dict):
    """An AdminClient given only the keys it knows (the source's kafka.* options may hold
    consumer settings, which the admin client would reject as unknown)."""
    from gregor.client.admin import ADMIN_OPTIONS, AdminClient
    known = {o.name for o in ADMIN_OPTIONS}
    return AdminClient({k: v for k, v in config.items() if k in known})


class TopicMetadata:
    """Driver-side metadata and offset queries (one consumer, reused across micro-batches)."""

    def __init__(self, config: dict):
        self._consumer = _consumer(config)
        self._admin = _admin(config)

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        if subscription.kind == "assign":
            return list(subscription.assigned)
        out = []
        for name, desc in self._admin.list_topics().items():
            if name.startswith("__") or not subscription.matches(name):
                continue
            out.extend((name, p.partition) for p in desc.partitions)
        return sorted(out)

    def earliest(self, tps: list[TopicPartition]) -> Offsets:
        return dict(self._consumer.beginning_offsets(list(tps))) if tps else {}

    def latest(self, tps: list[TopicPartition]) -> Offsets:
        return dict(self._consumer.end_offsets(list(tps))) if tps else {}

    def offsets_for_times(self, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        found = self._consumer.offsets_for_times(dict(wanted))
        out = {}
        for tp in wanted:
            hit = found.get(tp)
            out[tp] = None if hit is None else int(getattr(hit, "offset", hit))
        return out

    def close(self) -> None:
        try:
            self._consumer.close()
        finally:
            self._admin.close()


def read_range(config: dict, rng: OffsetRange, *, include_headers: bool, fail_on_data_loss: bool,
               poll_timeout_ms: int) -> Iterator[pa.RecordBatch]:
    """Yield the records of `rng` as Arrow batches, one per fetched chunk of the partition,
    built from the consumer's columns (no per-record Python objects).

    Offsets below the partition's start (deleted since planning) are data loss: raised, or
    skipped with a warning. Gaps inside the range (compaction, transaction markers) are normal."""
    from gregor.protocol.errors import OffsetOutOfRangeError
    consumer = _consumer(config)
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
    finally:
        consumer.close()


def _arrow_batch(rng: OffsetRange, pr, include_headers: bool) -> pa.RecordBatch:
    """The read schema's RecordBatch from one ArrowRecords chunk (gregor.client.consumer):
    its arrays go in as they are; the headers column already has the read schema's type."""
    batch = build_batch(rng.topic, rng.partition, pr.offsets, pr.timestamps, pr.timestamp_types,
                        pr.keys, pr.values, include_headers=False)
    if not include_headers:
        return batch
    return pa.RecordBatch.from_arrays(batch.columns + [pr.headers.cast(HEADER_TYPE)],
                                      schema=arrow_read_schema(True))


# Arrow data gathered before one round of send_batch calls: large enough that each partition
# gets ~1 MiB record batches (the bulk path's cap) from 4-8 partitions; small enough to be
# a modest, bounded buffer per Spark task.
COALESCE_BYTES = 8 << 20
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
        cfg = dict(config)
        cfg.setdefault("enable.idempotence", True)  # producer retries never duplicate a record
        # lz4 unless kafka.compression.type says otherwise (the producer's own default is
        # none): a sink moves bulk data, and with lz4 the broker receives and writes several
        # times fewer bytes; measured 1.6-1.8x the rows/s of an uncompressed write
        # (benchmarks/bench_spark.py). Every Kafka client reads lz4 batches transparently.
        cfg.setdefault("compression.type", SINK_COMPRESSION)
        self._producer = Producer(cfg)
        self._topic_option = topic_option
        self._results = []
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._transactional = transactional
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
        self._pending.append(batch)
        self._pending_bytes += batch.nbytes
        if self._pending_bytes >= COALESCE_BYTES:
            self._send_pending()

    def _send_pending(self) -> None:
        if not self._pending:
            return
        batches, self._pending, self._pending_bytes = self._pending, [], 0
        self._send(batches[0] if len(batches) == 1 else pa.concat_batches(batches))

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
        if headers is not None and (pc.sum(pc.list_value_length(headers)).as_py() or 0) > 0:
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
        txn = self._producer._txn
        self._producer.close()
        return txn.producer_id, txn.producer_epoch

    def abandon(self) -> None:
        """A failed task: abort its transaction (best effort, bounded) so read_committed
        readers need not wait for the broker to time it out, then close without raising
        (the task's own error is the one to report). A transaction this cannot abort is
        aborted by the next attempt's InitProducerId, or times out."""
        try:
            if self._transactional:
                self._producer.abort_transaction(ABANDON_TIMEOUT_S)
        except Exception as e:
            log.info("gregor sink: could not abort the failed task's transaction: %s", e)
        try:
            self._producer.close(ABANDON_TIMEOUT_S)
        except Exception:
            pass

    def close(self) -> int:
        """Flush, surface the first failure, close. Returns rows written."""
        try:
            self._send_pending()
            self._producer.flush()
            for r in self._results:
                r.result()
        finally:
            self._producer.close()
        return self.rows


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
