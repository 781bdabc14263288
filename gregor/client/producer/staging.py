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


def distribute(stage: KeyedStage, compression: int, batch_size: int) -> list[ProducerBatch]:
    """Partition the stage's records; returns one new batch per partition that got records,
    in partition order. The stage's memory reservation moves to the batches."""
    keys = stage.keys
    count = len(keys)
    parts = murmur2_partitions(keys, stage.n)
    order = np.argsort(parts, kind="stable")
    ps, starts = np.unique(parts[order], return_index=True)
    bounds = starts.tolist() + [count]
    pos = np.empty(count, dtype=np.int64)
    batches = []
    children = {}
    reserved = stage.reserved
    for j, p in enumerate(ps.tolist()):
        a, b = bounds[j], bounds[j + 1]
        idx = order[a:b]
        pos[idx] = np.arange(b - a)
        sel = idx.tolist()
        batch = ProducerBatch(stage.topic, p, stage.created, 0, batch_size, compression)
        batch.keys = _pick(keys, sel)
        batch.values = _pick(stage.values, sel)
        batch.timestamps = _pick(stage.timestamps, sel)
        batch.result.timestamps = batch.timestamps
        batch.size = BATCH_OVERHEAD + sum(map(len, batch.keys)) + RECORD_OVERHEAD * (b - a) + \
            sum(len(v) for v in batch.values if v is not None)
        share = min(reserved, batch.size)
        batch.reserved = share
        reserved -= share
        batch.full = True
        children[p] = batch
        batches.append(batch)
    if reserved:
        batches[0].reserved += reserved  # keep the whole reservation accounted
    part_list = parts.tolist()
    pos_list = pos.tolist()
    for i, cb in stage.callbacks or ():
        child = children[part_list[i]]
        if child.callbacks is None:
            child.callbacks = []
        child.callbacks.append((pos_list[i], cb))
    r = stage.result
    with _CALLBACK_LOCK:
        r.split = (part_list, pos_list, {p: c.result for p, c in children.items()})
        for i, fn, fut in r.done_callbacks or ():
            cr = children[part_list[i]].result
            if cr.done_callbacks is None:
                cr.done_callbacks = []
            cr.done_callbacks.append((pos_list[i], fn, fut))
        r.done_callbacks = None
        r.done = True
    r.event.set()
    stage.reserved = 0
    return batches
