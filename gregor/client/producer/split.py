"""Splitting a batch the broker refused as MESSAGE_TOO_LARGE into smaller ones."""
from __future__ import annotations

from .batch import _CALLBACK_LOCK, RECORD_OVERHEAD, ProducerBatch


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
    return children


__all__ = ["split_batch", "RECORD_OVERHEAD"]
