"""Browsing a topic's records: a page from a partition (or all of them) starting at an offset or
a timestamp, newest first or oldest first; one record by offset. Blocking: runs on a worker
thread.

Where a page starts, per partition [lo, hi) being the partition's offsets and n the page size:
- oldest first: from the offset (or the first record at/after the timestamp, or lo) onwards;
- newest first: the n records before the offset (inclusive) or timestamp (exclusive), or the
  last n of the partition; shown in reverse.
Several partitions: each contributes up to n, merged by timestamp, then cut to n.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from .reader import open_consumer, scan, watermarks

OLDEST, NEWEST = "oldest", "newest"


@dataclass
class BrowseQuery:
    topic: str
    partitions: list[int]
    order: str = NEWEST
    offset: int | None = None
    timestamp_ms: int | None = None
    limit: int = 50


def plan_ranges(q: BrowseQuery, lo: dict, hi: dict, at_time: dict) -> dict:
    """{(topic, p): (start, stop)} for a query, given each partition's watermarks and the
    offsets for q.timestamp_ms (at_time; None when no record is that late)."""
    ranges = {}
    for p in q.partitions:
        tp = (q.topic, p)
        first, end = lo.get(tp, 0), hi.get(tp, 0)
        if q.timestamp_ms is not None:
            o = at_time.get(tp)
            anchor = end if o is None else o.offset
            if q.order == OLDEST:
                start, stop = anchor, min(end, anchor + q.limit)
            else:
                start, stop = max(first, anchor - q.limit), anchor
        elif q.offset is not None:
            if q.order == OLDEST:
                start = min(max(q.offset, first), end)
                stop = min(end, start + q.limit)
            else:
                stop = min(end, max(first, q.offset + 1))
                start = max(first, stop - q.limit)
        elif q.order == OLDEST:
            start, stop = first, min(end, first + q.limit)
        else:
            start, stop = max(first, end - q.limit), end
        ranges[tp] = (start, stop)
    return ranges


def browse(settings, q: BrowseQuery, timeout: float) -> dict:
    """{"records": [ConsumerRecord], "watermarks": {p: [lo, hi]}}."""
    records = []
    with open_consumer(settings) as c:
        tps = [(q.topic, p) for p in q.partitions]
        lo, hi = watermarks(c, tps)
        at_time = c.offsets_for_times({tp: q.timestamp_ms for tp in tps}) \
            if q.timestamp_ms is not None else {}
        ranges = plan_ranges(q, lo, hi, at_time)

        def keep(pr):
            records.extend(pr.records())
            return True
        scan(c, ranges, keep, deadline=time.monotonic() + timeout)
    newest = q.order == NEWEST
    if len(q.partitions) == 1:
        records.sort(key=lambda r: r.offset, reverse=newest)
    else:
        records.sort(key=lambda r: (r.timestamp, r.partition, r.offset), reverse=newest)
    return {"records": records[:q.limit],
            "watermarks": {tp[1]: [lo.get(tp, 0), hi.get(tp, 0)] for tp in tps}}


def one_record(settings, topic: str, partition: int, offset: int, timeout: float):
    """The record at exactly that offset, or None."""
    found = []
    with open_consumer(settings, **{"max.partition.fetch.bytes": 16 << 20}) as c:
        _, hi = watermarks(c, [(topic, partition)])
        end = hi.get((topic, partition), 0)

        def take(pr):
            found.extend(r for r in pr.records() if r.offset == offset)
            return False
        if offset < end:
            scan(c, {(topic, partition): (offset, end)}, take,
                 deadline=time.monotonic() + timeout)
    return found[0] if found else None
