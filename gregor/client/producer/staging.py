"""Keyed records staged per topic, partitioned many at a time.

With Java's default partitioner a keyed record goes to toPositive(murmur2(key)) % partitions.
murmur2 in Python costs more than everything else send() does for a record, so keyed records
for a topic with several partitions first collect in a per-topic stage; when the stage fills up
(or lingers, or is flushed, or another record for the topic takes a different path) its keys are
hashed in one numpy pass and its records become ordinary batches, one per partition, queued in
the accumulator. Each record keeps its place in its partition's order. Futures handed out for
staged records follow their records through `ProduceResult.split` (a routing tuple here).

Only used when the result is exactly what the default partitioner would give: no serializers or
interceptors, partitioner Java's default without ignore.keys, and a key on the record.
"""
from __future__ import annotations

from operator import itemgetter

import numpy as np

from .batch import _CALLBACK_LOCK, BATCH_OVERHEAD, RECORD_OVERHEAD, ProducerBatch, ProduceResult
from .bulk_hash import murmur2_partitions


class KeyedStage:
    __slots__ = ("topic", "n", "keys", "values", "timestamps", "callbacks", "size",
                 "capacity", "created", "result", "reserved")

    def __init__(self, topic: str, n: int, capacity: int, reserved: int, now: float):
        self.topic = topic
        self.n = n
        self.keys: list = []
        self.values: list = []
        self.timestamps: list = []
        self.callbacks = None
        self.size = 0
        self.capacity = capacity
        self.created = now
        self.result = ProduceResult(topic, -1, self.timestamps)
        self.reserved = reserved


def _pick(seq, sel):
    return list(itemgetter(*sel)(seq)) if len(sel) > 1 else [seq[sel[0]]]


def distribute(stage: KeyedStage, opened: list, limit: int, compression: int,
               batch_size: int, fresh) -> list[ProducerBatch]:
    """Partition the stage's records. A partition's share goes into its open batch when that
    batch is still fresh and stays under `limit` bytes (it was opened before the stage, so
    order holds); otherwise into a new batch, returned for the caller to queue and leave
    open. The stage's memory reservation moves along with the records."""
    keys = stage.keys
    count = len(keys)
    parts = murmur2_partitions(keys, stage.n)
    order = np.argsort(parts, kind="stable")
    ps, starts = np.unique(parts[order], return_index=True)
    bounds = starts.tolist() + [count]
    pos = np.empty(count, dtype=np.int64)
    new_batches = []
    targets = {}
    reserved = stage.reserved
    values = stage.values
    for j, p in enumerate(ps.tolist()):
        a, b = bounds[j], bounds[j + 1]
        idx = order[a:b]
        sel = idx.tolist()
        keys_p = _pick(keys, sel)
        values_p = _pick(values, sel)
        ts_p = _pick(stage.timestamps, sel)
        size_p = sum(map(len, keys_p)) + RECORD_OVERHEAD * (b - a) + \
            sum(len(v) for v in values_p if v is not None)
        share = min(reserved, size_p)
        reserved -= share
        target = opened[p] if p < len(opened) else None
        if target is not None and fresh(target) and target.size + size_p <= limit:
            shift = len(target.keys)
            if target.headers is not None:
                target.headers.extend([None] * (b - a))
            target.keys.extend(keys_p)
            target.values.extend(values_p)
            target.timestamps.extend(ts_p)
            target.size += size_p
            target.max_bytes = max(target.max_bytes, target.size)
            target.reserved += share
        else:
            shift = 0
            target = ProducerBatch(stage.topic, p, stage.created, share, batch_size,
                                   compression)
            target.keys, target.values, target.timestamps = keys_p, values_p, ts_p
            target.result.timestamps = ts_p
            target.size = BATCH_OVERHEAD + size_p
            target.max_bytes = max(batch_size, target.size)
            new_batches.append(target)
        pos[idx] = np.arange(shift, shift + b - a)
        targets[p] = target
    if reserved:
        next(iter(targets.values())).reserved += reserved  # keep it all accounted
    part_list = parts.tolist()
    pos_list = pos.tolist()
    for i, cb in stage.callbacks or ():
        t = targets[part_list[i]]
        if t.callbacks is None:
            t.callbacks = []
        t.callbacks.append((pos_list[i], cb))
    r = stage.result
    with _CALLBACK_LOCK:
        r.split = (part_list, pos_list, {p: t.result for p, t in targets.items()})
        for i, fn, fut in r.done_callbacks or ():
            cr = targets[part_list[i]].result
            if cr.done_callbacks is None:
                cr.done_callbacks = []
            cr.done_callbacks.append((pos_list[i], fn, fut))
        r.done_callbacks = None
        r.done = True
    r.wake()
    stage.reserved = 0
    return new_batches
