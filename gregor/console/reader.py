"""Reading ranges of partitions for the console (blocking; runs on worker threads): browse a
page of records, scan for a search, fetch the record at a committed offset (time lag).

Each operation opens its own assign-mode Consumer and closes it after: a browse or a search is
rare next to its reads, and a consumer per call keeps no state between operators' requests.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from ..client.consumer import Consumer

# How long one poll waits: short, so a cancelled search or a passed deadline is seen soon.
_POLL_S = 0.2
PARTITION_DONE = "partition-done"


def open_consumer(settings, **extra) -> Consumer:
    cfg = settings.client(**{"enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "fetch.max.wait.ms": 100, "max.partition.fetch.bytes": 1 << 20})
    cfg.update(extra)
    return Consumer(cfg)


def watermarks(consumer: Consumer, tps) -> tuple[dict, dict]:
    tps = list(tps)
    return consumer.beginning_offsets(tps), consumer.end_offsets(tps)


@dataclass
class ScanOutcome:
    scanned: int = 0
    reason: str = "end"          # end | limit | time | cancelled | results


def scan(consumer: Consumer, ranges: dict, on_chunk, *, deadline: float,
         cancel: threading.Event | None = None, max_records: int | None = None,
         arrow: bool = False) -> ScanOutcome:
    """Read [start, stop) of each (topic, partition) and hand every chunk (PartitionRecords,
    cut to the range) to on_chunk(chunk): False stops the scan, PARTITION_DONE stops reading
    that partition, anything else goes on. arrow=True hands out ArrowRecords (columns as
    pyarrow arrays, decoded without a Python object per record) instead of PartitionRecords."""
    out = ScanOutcome()
    todo = {tp: (s, e) for tp, (s, e) in ranges.items() if s < e}
    if not todo:
        return out
    consumer.assign([(t, p, s) for (t, p), (s, _) in todo.items()])
    while todo:
        if cancel is not None and cancel.is_set():
            out.reason = "cancelled"
            return out
        if time.monotonic() >= deadline:
            out.reason = "time"
            return out
        for pr in consumer.poll_batches(_POLL_S, arrow=arrow):
            tp = (pr.topic, pr.partition)
            if tp not in todo:
                continue
            stop = todo[tp][1]
            n = len(pr)
            if n and pr.offset_at(n - 1) >= stop:
                # offsets ascend: the records before stop are a prefix
                n = int(np.searchsorted(np.asarray(pr.offsets, dtype=np.int64), stop))
                pr = pr.slice(0, n)
            if max_records is not None and out.scanned + n > max_records:
                pr = pr.slice(0, max_records - out.scanned)
                n = len(pr)
            out.scanned += n
            verdict = on_chunk(pr) if n else True
            if verdict is False:
                out.reason = "results"
                return out
            if max_records is not None and out.scanned >= max_records:
                out.reason = "limit"
                return out
            if verdict == PARTITION_DONE or pr.next_offset >= stop or (
                    n and pr.offset_at(n - 1) >= stop - 1):
                del todo[tp]
                consumer.pause(tp)
    return out


def records_at(settings, offsets: dict, timeout: float) -> dict:
    """{(topic, partition): offset} -> {(topic, partition): the first record at or after that
    offset} (partitions without one are left out)."""
    if not offsets:
        return {}
    found = {}
    with open_consumer(settings, **{"max.partition.fetch.bytes": 64 * 1024}) as c:
        _, ends = watermarks(c, offsets)
        ranges = {tp: (o, ends[tp]) for tp, o in offsets.items() if o < ends.get(tp, o)}

        def take(pr):
            found[(pr.topic, pr.partition)] = pr.records()[0]
            return PARTITION_DONE if len(found) < len(ranges) else False
        scan(c, ranges, take, deadline=time.monotonic() + timeout)
    return found
