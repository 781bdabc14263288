"""Keyed records staged per topic, partitioned many at a time.

With Java's default partitioner a keyed record goes to toPositive(murmur2(key)) % partitions.
murmur2 in Python costs more than everything else send() does for a record, so keyed records
for a topic with several partitions first collect in a per-topic stage; when the stage fills up
(or lingers, or is flushed, or another record for the topic takes a different path) its keys are
hashed in one numpy pass and its records become ordinary batches, one per partition, queued in
the accumulator. Each record keeps its place in its partition's order. Futures handed out for
staged records follow their records through `ProduceResult.split` (a routing tuple here: the
numpy arrays of each record's partition and index in that partition's batch). A stage holds up
to accumulator.STAGE_BATCHES x batch.size per partition (why: see there).

Only used when the result is exactly what the default partitioner would give: no serializers or
interceptors, partitioner Java's default without ignore.keys, and a key on the record.
"""
from __future__ import annotations

from operator import itemgetter

import numpy as np

from .batch import (_CALLBACK_LOCK, BATCH_OVERHEAD, RECORD_OVERHEAD, ProducerBatch, ProduceResult,
                    new_timestamps)
from .bulk_hash import murmur2_partitions


class KeyedStage:
    __slots__ = ("topic", "n", "keys", "values", "timestamps", "callbacks", "size",
                 "capacity", "created", "result", "reserved")

    def __init__(self, topic: str, n: int, capacity: int, reserved: int, now: float):
        self.topic = topic
        self.n = n
        self.keys: list = []
        self.values: list = []
        self.timestamps = new_timestamps()
        self.callbacks = None
        self.size = 0
        self.capacity = capacity
        self.created = now
        self.result = ProduceResult(topic, -1, self.timestamps)
        self.reserved = reserved


def _lengths(items: list, count: int) -> np.ndarray:
    """len() of every item (None counts 0) as int64."""
    try:
        return np.fromiter(map(len, items), np.int64, count)
    except TypeError:  # a None among them (checking first would cost ~13 ns a record)
        return np.fromiter((len(x) if x is not None else 0 for x in items), np.int64, count)


def distribute(stage: KeyedStage, opened: list, limit: int, compression: int,
               batch_size: int, fresh) -> list[ProducerBatch]:
    """Partition the stage's records. A partition's share goes into its open batch when that
    batch is still fresh and stays under `limit` bytes (it was opened before the stage, so
    order holds); otherwise into a new batch, returned for the caller to queue and leave
    open. The stage's memory reservation moves along with the records.

    Per-record work stays in C: one numpy pass for hashes, sizes and positions, and one
    itemgetter per column puts the records in partition order (then sliced per partition)."""
    keys = stage.keys
    count = len(keys)
    key_lens = np.fromiter(map(len, keys), np.int64, count)  # staged records all have keys
    parts = murmur2_partitions(keys, stage.n, key_lens)
    # A stable sort keeps send order within each partition; on 16-bit ints numpy's stable
    # sort is a radix sort, ~3x faster than on int64 (Kafka caps partitions far below 2**15
    # in practice; more falls back to the int64 sort).
    order = np.argsort(parts.astype(np.int16) if stage.n < 32768 else parts, kind="stable")
    counts = np.bincount(parts, minlength=stage.n)
    ps = np.flatnonzero(counts)
    counts = counts[ps]
    ends = np.cumsum(counts)
    starts = ends - counts
    rec_sizes = key_lens + _lengths(stage.values, count) + RECORD_OVERHEAD
    sizes = np.add.reduceat(rec_sizes[order], starts)
    sel = order.tolist()
    if count > 1:
        get = itemgetter(*sel)
        keys_o, values_o = get(keys), get(stage.values)
    else:
        keys_o, values_o = keys, stage.values
    ts_o = np.frombuffer(stage.timestamps, dtype=np.float64)[order]  # a copy
    shifts = []
    new_batches = []
    targets = {}
    reserved = stage.reserved
    for p, a, b, size_p in zip(ps.tolist(), starts.tolist(), ends.tolist(), sizes.tolist()):
        target = opened[p] if p < len(opened) else None
        joins = target is not None and fresh(target) and target.size + size_p <= limit
        # A new batch stays open for later records up to batch.size: it takes that much,
        # as a batch opened by send() would.
        share = min(reserved, size_p if joins else max(size_p + BATCH_OVERHEAD, batch_size))
        reserved -= share
        if joins:
            shifts.append(len(target.keys))
            if target.headers is not None:
                target.headers.extend([None] * (b - a))
            target.keys.extend(keys_o[a:b])
            target.values.extend(values_o[a:b])
            target.timestamps.frombytes(ts_o[a:b].tobytes())
            target.size += size_p
            target.max_bytes = max(target.max_bytes, target.size)
            target.reserved += share
        else:
            shifts.append(0)
            target = ProducerBatch(stage.topic, p, stage.created, share, batch_size,
                                   compression)
            ts_p = new_timestamps(ts_o[a:b].tobytes())
            target.keys, target.values, target.timestamps = \
                list(keys_o[a:b]), list(values_o[a:b]), ts_p
            target.result.timestamps = ts_p
            target.size = BATCH_OVERHEAD + size_p
            target.max_bytes = max(batch_size, target.size)
            new_batches.append(target)
        targets[p] = target
    # What is left of the stage's reservation stays on it for the caller to give back: kept
    # on a batch it would stay taken until that batch is acknowledged, and a stage holding a
    # few records (keyed records between null-key ones flush it each time) would tie up its
    # whole reservation per batch.
    stage.reserved = reserved
    # Record i's index in its partition's batch: its rank within the partition plus where
    # the partition's share starts in that batch.
    pos = np.empty(count, dtype=np.int64)
    pos[order] = np.arange(count) - np.repeat(starts - np.array(shifts), counts)
    r = stage.result
    if stage.callbacks or r.done_callbacks:
        part_list = parts.tolist()
        pos_list = pos.tolist()
    for i, cb in stage.callbacks or ():
        t = targets[part_list[i]]
        if t.callbacks is None:
            t.callbacks = []
        t.callbacks.append((pos_list[i], cb))
    with _CALLBACK_LOCK:
        # Futures of staged records find their batch through this routing (resolve()).
        r.split = (parts, pos, {p: t.result for p, t in targets.items()})
        for i, fn, fut in r.done_callbacks or ():
            cr = targets[part_list[i]].result
            if cr.done_callbacks is None:
                cr.done_callbacks = []
            cr.done_callbacks.append((pos_list[i], fn, fut))
        r.done_callbacks = None
        r.done = True
    r.wake()
    return new_batches
