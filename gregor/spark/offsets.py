"""Offset arithmetic of the gregor source: JSON offsets, resolving starting/ending specs,
planning Spark partitions and admission control. Pure functions, no Spark and no network:
the broker's answers (earliest, latest, offsets for timestamps) come in as plain dicts.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from .options import EARLIEST, LATEST, OffsetSpec, OptionError

log = logging.getLogger("gregor.spark")

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


class DataLossError(RuntimeError):
    """Records the query expected to read are gone (retention, deleted or recreated topic)."""


def to_json(offsets: Mapping[TopicPartition, int]) -> dict:
    """{("t", 1): 5} -> {"t": {"1": 5}}, topics and partitions sorted so that equal offsets give
    equal JSON (Spark compares checkpointed offsets as strings)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition) in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json(data: Mapping) -> Offsets:
    try:
        return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"not a gregor offset (expected {{topic: {{partition: offset}}}}): {data!r}") from None


def resolve(spec: OffsetSpec, partitions: Iterable[TopicPartition], *, earliest: Offsets, latest: Offsets,
            for_times: Callable[[dict[TopicPartition, int]], dict[TopicPartition, int | None]],
            option: str, timestamp_strategy: str = "error", is_end: bool = False,
            floating: set | None = None) -> Offsets:
    """Turn a spec into concrete offsets for each partition.

    A timestamp that no record reaches resolves to the end of the partition when the read ends
    there (endingTimestamp) and follows `timestamp_strategy` for starting timestamps.
    `floating`, when given, receives the partitions resolved to their latest offset: resolving
    the same spec again later would give another answer for them."""
    parts = sorted(partitions)
    floating = set() if floating is None else floating
    if spec.kind == "earliest":
        return {tp: earliest[tp] for tp in parts}
    if spec.kind == "latest":
        floating.update(parts)
        return {tp: latest[tp] for tp in parts}
    if spec.kind == "offsets":
        missing = [tp for tp in parts if tp not in spec.per_partition]
        if missing:
            t, p = missing[0]
            raise OptionError(f"option '{option}' gives per-partition offsets but not one for {t}-{p}; "
                              "list every partition of the topics read (use -2 for earliest, -1 for latest)")
        out = {}
        for tp in parts:
            off = spec.per_partition[tp]
            out[tp] = earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
            if off == LATEST:
                floating.add(tp)
        return out
    if spec.kind == "timestamp":
        wanted = {tp: spec.timestamp for tp in parts}
    else:
        missing = [tp for tp in parts if tp not in spec.per_partition]
        if missing:
            t, p = missing[0]
            raise OptionError(f"option '{option}' gives per-partition timestamps but not one for {t}-{p}; "
                              "list every partition of the topics read")
        wanted = {tp: spec.per_partition[tp] for tp in parts}
    found = for_times(wanted) if wanted else {}
    out = {}
    for tp in parts:
        off = found.get(tp)
        if off is None:
            if is_end or timestamp_strategy == "latest":
                off = latest[tp]
                floating.add(tp)
            else:
                raise OptionError(f"no record in {tp[0]}-{tp[1]} has a timestamp at or after {wanted[tp]} "
                                  f"(option '{option}'); set startingOffsetsByTimestampStrategy='latest' "
                                  "to start at the end of such partitions instead")
        out[tp] = off
    return out


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one topic-partition, read by one Spark task."""
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    """Spark's reportDataLoss: raise, or log a warning and carry on with failOnDataLoss=false."""
    if fail_on_data_loss:
        raise DataLossError(message + ". If losing them is acceptable, set the option "
                            "failOnDataLoss=false to carry on with a warning.")
    log.warning("%s; carrying on because failOnDataLoss=false.", message)


def check_ranges(start: Offsets, end: Offsets, earliest: Offsets | None, *, fail_on_data_loss: bool,
                 context: str) -> Offsets:
    """Return the start offsets actually readable, handling records that are gone.

    A start below the partition's first offset (retention, DeleteRecords) or a partition whose
    end went below its start (topic deleted and recreated) is data loss: raise with the facts and
    the ways forward, or skip ahead with a warning when failOnDataLoss is false."""
    fixed = dict(start)
    for tp, s in start.items():
        problems = []
        first = earliest.get(tp) if earliest is not None else None
        e = end.get(tp)
        if e is not None and e < s:
            problems.append(f"its end offset {e} is below the offset {s} the query had reached, so the "
                            "topic was probably deleted and recreated")
            new_start = first if first is not None else 0
        elif first is not None and s < first:
            problems.append(f"offsets {s}..{first - 1} are no longer available (the partition now starts at "
                            f"{first}; removed by retention or delete-records)")
            new_start = first
        else:
            continue
        what = f"{context}: records of {tp[0]}-{tp[1]} were lost: {problems[0]}."
        if fail_on_data_loss:
            raise DataLossError(what + " If losing them is acceptable, set the option failOnDataLoss=false "
                                "to skip ahead with a warning; otherwise restore the data or restart the "
                                "query with a new checkpoint and explicit startingOffsets.")
        log.warning("%s Skipping ahead to offset %d because failOnDataLoss=false.", what, new_start)
        fixed[tp] = new_start
    return fixed


def plan_ranges(start: Offsets, end: Offsets, min_partitions: int | None = None,
                max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """One range per topic-partition with records to read. With max_records_per_partition
    (Spark 4's maxRecordsPerPartition), a range is first cut into ceil(size / max) even pieces;
    then, with min_partitions, ranges are split (in proportion to their sizes, every range at
    least one piece) until there are that many."""
    ranges = [OffsetRange(t, p, start[(t, p)], end[(t, p)]) for (t, p) in sorted(start)
              if (t, p) in end and end[(t, p)] > start[(t, p)]]
    total = sum(r.size for r in ranges)
    if max_records_per_partition:
        ranges = [piece for r in ranges
                  for piece in _split(r, -(-r.size // max_records_per_partition))]
    if not min_partitions or len(ranges) >= min_partitions or not ranges:
        return ranges
    pieces = _apportion([r.size for r in ranges], min_partitions, minimum=1)
    out = [piece for r, n in zip(ranges, pieces) for piece in _split(r, n)]
    assert sum(r.size for r in out) == total
    return out


def _split(r: OffsetRange, n: int) -> list[OffsetRange]:
    """`r` cut into n consecutive pieces whose sizes differ by at most one (never empty)."""
    n = max(1, min(n, r.size))
    step, extra = divmod(r.size, n)
    out, s = [], r.start
    for i in range(n):
        e = s + step + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, s, e))
        s = e
    return out


def _apportion(sizes: list[int], amount: int, minimum: int = 0) -> list[int]:
    """Split `amount` into integer shares proportional to `sizes` (largest remainder), each at
    least `minimum`; shares sum to exactly max(amount, minimum * len(sizes))."""
    total = sum(sizes)
    base = [minimum] * len(sizes)
    left = amount - minimum * len(sizes)
    if left <= 0 or total == 0:
        return base
    exact = [left * s / total for s in sizes]
    shares = [int(x) for x in exact]
    short = left - sum(shares)
    by_remainder = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in by_remainder[:short]:
        shares[i] += 1
    return [b + s for b, s in zip(base, shares)]


def limit_offsets(start: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """Admission control for maxOffsetsPerTrigger, as Spark's Kafka source computes it
    (KafkaMicroBatchStream.rateLimit): each partition with a backlog advances by
    max_rows * its share of the total backlog, rounded down, except that a share below one
    record is rounded up so that no partition with records waits while bigger ones drain.
    The total can therefore pass max_rows by up to one record per partition."""
    backlog = {tp: latest[tp] - start.get(tp, latest[tp]) for tp in latest}
    total = sum(b for b in backlog.values() if b > 0)
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        b = backlog[tp]
        if b <= 0:
            out[tp] = end
            continue
        share = max_rows * (b / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, start.get(tp, end) + step)
    return out
