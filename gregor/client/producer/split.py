"""Splitting a batch into smaller ones: one the broker refused as MESSAGE_TOO_LARGE (by size),
or one with more records than batch.num.messages (by count, at drain)."""
from __future__ import annotations

import numpy as np

from .batch import _CALLBACK_LOCK, BATCH_OVERHEAD, RECORD_OVERHEAD, ProducerBatch
from .staging import _lengths


def split_batch(b: ProducerBatch, batch_size: int) -> list[ProducerBatch]:
    """New batches (in order) holding b's records, each at most about half of b. The old
    result points its futures at the new ones; callbacks move with their records."""
    target = max(min(batch_size, b.size // 2), 1)
    children: list[ProducerBatch] = []
    starts: list[int] = []
    cur = None
    ts, keys, values, headers = b.records_for_split()
    for i in range(len(keys)):
        k, v = keys[i], values[i]
        h = headers[i] if headers is not None else None
        if cur is not None and cur.try_append(ts[i], k, v, h, None) is not None:
            continue
        cur = ProducerBatch(b.topic, b.partition, b.created, 0, target, b.compression)
        cur.attempts = b.attempts
        cur.interceptors = b.interceptors
        cur.try_append(ts[i], k, v, h, None)
        children.append(cur)
        starts.append(i)
    if len(children) == 1 and len(keys) > 1:
        # Sizes are estimates: force two halves so the split always makes progress.
        half = len(keys) // 2
        children, starts = [], []
        for lo, hi in ((0, half), (half, len(keys))):
            c = ProducerBatch(b.topic, b.partition, b.created, 0, 1 << 62, b.compression)
            c.attempts = b.attempts
            c.interceptors = b.interceptors
            for i in range(lo, hi):
                c.try_append(ts[i], keys[i], values[i],
                             headers[i] if headers is not None else None, None)
            children.append(c)
            starts.append(lo)
    for c in children:
        c.full = True
        c.no_merge = True
    children[0].reserved, b.reserved = b.reserved, 0

    def owner(i):
        j = 0
        while j + 1 < len(starts) and starts[j + 1] <= i:
            j += 1
        return j
    _hand_over(b, children, starts, owner)
    return children


def split_records(b: ProducerBatch, max_records: int) -> list[ProducerBatch]:
    """b (never encoded, more than max_records records: batch.num.messages) as batches of
    max_records records each (the last one fewer), in order. Futures and callbacks follow
    their records; the memory reservation is shared out by size. The children are full but
    may still be merged with later batches up to max_records (see the accumulator)."""
    keys, values, ts, headers = b.keys, b.values, b.timestamps, b.headers
    count = len(keys)
    sizes = _lengths(keys, count) + _lengths(values, count) + RECORD_OVERHEAD
    if headers is not None:
        sizes += np.fromiter((sum(len(k) + (len(v) if v is not None else 0) + 6 for k, v in h)
                              if h else 0 for h in headers), np.int64, count)
    cum = np.concatenate(([0], np.cumsum(sizes))).tolist()
    starts = list(range(0, count, max_records))
    children = []
    reserved = b.reserved
    for s in starts:
        e = min(s + max_records, count)
        c = ProducerBatch(b.topic, b.partition, b.created, 0, 0, b.compression)
        c.keys, c.values = keys[s:e], values[s:e]
        c.timestamps = c.result.timestamps = ts[s:e]
        if headers is not None:
            c.headers = headers[s:e]
        c.size = c.max_bytes = BATCH_OVERHEAD + cum[e] - cum[s]
        c.reserved = min(reserved, b.reserved * (cum[e] - cum[s]) // max(cum[-1], 1))
        reserved -= c.reserved
        c.attempts = b.attempts
        c.interceptors = b.interceptors
        c.full = True
        children.append(c)
    children[-1].reserved += reserved  # the rounding remainder
    b.reserved = 0
    _hand_over(b, children, starts, lambda i: i // max_records)
    return children


def _hand_over(b: ProducerBatch, children: list, starts: list, owner) -> None:
    """Point b's futures, callbacks and done-callbacks at its children (record i lives in
    child owner(i), which starts at record starts[owner(i)]) and retire b."""
    for i, cb in b.callbacks or ():
        j = owner(i)
        c = children[j]
        if c.callbacks is None:
            c.callbacks = []
        c.callbacks.append((i - starts[j], cb))
    r = b.result
    with _CALLBACK_LOCK:
        r.split = [(s, c.result) for s, c in zip(starts, children)]
        for i, fn, fut in r.done_callbacks or ():
            j = owner(i)
            cr = children[j].result
            if cr.done_callbacks is None:
                cr.done_callbacks = []
            cr.done_callbacks.append((i - starts[j], fn, fut))
        r.done_callbacks = None
        r.done = True
    b.final = True
    r.wake()


__all__ = ["split_batch", "split_records", "RECORD_OVERHEAD"]
