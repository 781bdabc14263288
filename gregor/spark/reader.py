"""Batch and streaming readers of the gregor data source.

Planning happens on the driver (metadata and offsets through `TopicMetadata`); each Spark
task reads one offset range of one topic-partition with a consumer and yields Arrow
batches. Streaming offsets are JSON {topic: {partition: next offset}}, as in Spark's Kafka
connector, so a checkpoint reads the same way in both.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows,
                                              SupportsTriggerAvailableNow)

from . import offsets as off, worker_heap
from .client import TopicMetadata, read_range
from .options import OptionError, SourceOptions

log = logging.getLogger("gregor.spark")


@dataclass
class RangePartition(InputPartition):
    """One Spark task's work: records [start, end) of one topic-partition."""
    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self):
        super().__init__((self.topic, self.partition, self.start, self.end))


def _as_partitions(ranges: list[off.OffsetRange]) -> list[RangePartition]:
    return [RangePartition(r.topic, r.partition, r.start, r.end) for r in ranges]


def _read(opts: SourceOptions, p: RangePartition, decoder=None):
    if not isinstance(p, RangePartition):
        # Spark hands a placeholder partition to read() when planning found nothing to read.
        return
    rng = off.OffsetRange(p.topic, p.partition, p.start, p.end)
    batches = read_range(opts.client, rng, include_headers=opts.include_headers,
                         fail_on_data_loss=opts.fail_on_data_loss,
                         poll_timeout_ms=opts.poll_timeout_ms,
                         group_id=f"{opts.group_id}-executor" if not opts.custom_group_id
                         else None)
    if decoder is None:
        yield from batches
    else:                        # valueFormat / keyFormat (gregor/spark/confluent.py)
        for batch in batches:
            yield decoder.decode(batch)
    worker_heap.settle()


class _UsesMetadata:
    """Lazily opened driver-side metadata client, never pickled to executors."""
    opts: SourceOptions
    _meta: TopicMetadata | None = None

    @property
    def meta(self) -> TopicMetadata:
        if self._meta is None:
            self._meta = TopicMetadata(self.opts.client, group_id=f"{self.opts.group_id}-driver",
                                       attempts=self.opts.fetch_offset_retries,
                                       retry_interval_ms=self.opts.fetch_offset_retry_interval_ms)
        return self._meta

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_meta"] = None
        return state

    def _partitions(self) -> list[off.TopicPartition]:
        return self.meta.partitions(self.opts.subscription,
                                    required=self.opts.subscription.kind != "subscribePattern")

    def _close_meta(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None

    def _plan(self, start: off.Offsets, end: off.Offsets) -> list[RangePartition]:
        return _as_partitions(off.plan_ranges(start, end, self.opts.min_partitions,
                                              self.opts.max_records_per_partition))


class GregorBatchReader(_UsesMetadata, DataSourceReader):
    def __init__(self, opts: SourceOptions, decoder=None):
        self.opts = opts
        self.decoder = decoder      # decodes keyFormat / valueFormat columns on the tasks

    def partitions(self):
        try:
            parts = self._partitions()
            earliest = self.meta.earliest(parts)
            latest = self.meta.latest(parts)
            start = off.resolve(self.opts.starting, parts, earliest=earliest, latest=latest,
                                for_times=self.meta.offsets_for_times, option="startingOffsets",
                                timestamp_strategy=self.opts.timestamp_strategy)
            end = off.resolve(self.opts.ending, parts, earliest=earliest, latest=latest,
                              for_times=self.meta.offsets_for_times, option="endingOffsets", is_end=True)
        finally:
            self._close_meta()
        for tp in parts:
            if start[tp] > end[tp]:
                raise OptionError(f"starting offset {start[tp]} of {tp[0]}-{tp[1]} is after its ending offset "
                                  f"{end[tp]}; check startingOffsets / endingOffsets")
            if end[tp] > latest[tp]:
                raise OptionError(f"endingOffsets for {tp[0]}-{tp[1]} is {end[tp]} but the partition ends at "
                                  f"{latest[tp]}; use -1 for latest")
        start = off.check_ranges(start, end, earliest, fail_on_data_loss=self.opts.fail_on_data_loss,
                                 context="batch query")
        return self._plan(start, end)

    def read(self, partition: RangePartition):
        return _read(self.opts, partition, self.decoder)


class GregorStreamReader(_UsesMetadata, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Admission control as Spark's Kafka source: maxOffsetsPerTrigger caps
    each batch (split across partitions in proportion to their backlog, at least one record for
    each partition that has some); minOffsetsPerTrigger holds a batch back until that many
    records wait or maxTriggerDelay has passed since the last batch (never the first trigger).

    The starting offsets are resolved once per run (`initialOffset`): Spark asks for them more
    than once (to plan batch 0 and again to run it), and a second resolution of `latest` on a
    topic being written to would start batch 0 past its own end. Spark's connector also writes
    them to the checkpoint, so that a restart that re-runs batch 0 finds them; a Python data
    source is not told where the checkpoint is, so instead batch 0 never advances a partition
    whose start was resolved to its latest offset (`startingOffsets=latest`, -1 in JSON, or a
    timestamp no record reaches with startingOffsetsByTimestampStrategy=latest). Batch 0's end
    for such a partition is its start, and a re-run of batch 0 after a restart (its start
    resolved anew, possibly further on) reads nothing of it: those records come with batch 1,
    exactly once."""

    def __init__(self, opts: SourceOptions, decoder=None):
        self.opts = opts
        self.decoder = decoder
        self._target: off.Offsets | None = None  # Trigger.AvailableNow: never read past this
        self._last_trigger: float | None = None  # None: the first trigger is never held back
        self._initial: dict | None = None        # initialOffset() of this run, resolved once
        self._floating: set = set()              # its partitions that were resolved to latest
        self._planned_first = False              # latestOffset() ran once in this run
        self._latest: off.Offsets | None = None  # latest offsets seen by the last latestOffset

    # -- planning (driver) -------------------------------------------------------------------

    def initialOffset(self) -> dict:
        if self._initial is None:
            parts = self._partitions()
            earliest = self.meta.earliest(parts)
            latest = self.meta.latest(parts)
            floating: set = set()
            start = off.resolve(self.opts.starting, parts, earliest=earliest, latest=latest,
                                for_times=self.meta.offsets_for_times, option="startingOffsets",
                                timestamp_strategy=self.opts.timestamp_strategy, floating=floating)
            self._initial, self._floating = off.to_json(start), floating
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        # PySpark has no composite limit: with both options, the engine gets the maximum and
        # latestOffset applies the minimum itself (opts.min_offsets_per_trigger).
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        parts = self._partitions()
        self._target = self.meta.latest(parts)

    def _current(self, start: off.Offsets) -> tuple[off.Offsets, off.Offsets]:
        """(start including new partitions at earliest, latest) for the partitions to read now."""
        parts = self._partitions()
        if self._target is not None:
            parts = [tp for tp in parts if tp in self._target]
        vanished = sorted(set(start) - set(parts))
        if vanished and self._target is None:
            t, p = vanished[0]
            msg = (f"partition {t}-{p} the query was reading no longer exists (topic deleted?)")
            if self.opts.fail_on_data_loss:
                raise off.DataLossError(msg + "; set failOnDataLoss=false to carry on without it, or "
                                        "restart the query with a new checkpoint")
            log.warning("%s; carrying on without it because failOnDataLoss=false", msg)
        latest = self.meta.latest(parts, known=start)
        self._latest = dict(latest)
        if self._target is not None:
            latest = {tp: min(latest[tp], self._target[tp]) for tp in parts}
        new = [tp for tp in parts if tp not in start]
        earliest_new = self.meta.earliest(new) if new else {}
        current = {tp: start.get(tp, earliest_new.get(tp)) for tp in parts}
        return current, latest

    def _hold_back(self, backlog: int, min_rows: int) -> bool:
        """minOffsetsPerTrigger: wait for more records unless maxTriggerDelay has passed since
        the last batch (Spark's delayBatch; the first trigger of a run never waits)."""
        now = time.monotonic()
        if self._last_trigger is None or (now - self._last_trigger) * 1000 >= self.opts.max_trigger_delay_ms:
            self._last_trigger = now
            return False
        if backlog < min_rows:
            return True
        self._last_trigger = now
        return False

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = off.from_json(start)
        current, latest = self._current(begin)
        earliest = self.meta.earliest(list(current))
        current = off.check_ranges(current, latest, earliest, fail_on_data_loss=self.opts.fail_on_data_loss,
                                   context="streaming query")
        latest = {tp: max(latest[tp], current[tp]) for tp in current}
        first = not self._planned_first
        self._planned_first = True
        if first and self._floating and start == self._initial:
            # Batch 0 of a run whose start floats (see the class docstring): those partitions
            # stay where they start, the others are planned as usual.
            latest = {tp: current[tp] if tp in self._floating else o for tp, o in latest.items()}
        backlog = sum(latest[tp] - current[tp] for tp in current)
        if isinstance(limit, ReadAllAvailable):
            end = latest
        else:
            min_rows = (limit.min_rows if isinstance(limit, ReadMinRows)
                        else self.opts.min_offsets_per_trigger)
            # Trigger.AvailableNow must reach its target, so it never holds back for a minimum.
            if min_rows and self._target is None and self._hold_back(backlog, min_rows):
                return start
            if isinstance(limit, ReadMaxRows):
                end = off.limit_offsets(current, latest, limit.max_rows)
            else:
                end = latest
        # Keep partitions the engine knew about (a vanished one stays at its last offset) so
        # that offsets never move backwards.
        for tp, o in begin.items():
            end.setdefault(tp, o)
        return off.to_json(end)

    def reportLatestOffset(self):
        """The latest offsets the last latestOffset() saw (progress.sources[].latestOffset), as
        Spark's Kafka source reports them: no extra broker round trip."""
        return None if not self._latest else off.to_json(self._latest)

    def partitions(self, start: dict, end: dict):
        begin = off.from_json(start)
        stop = off.from_json(end)
        if start == self._initial and self._floating:
            # Batch 0 re-run after a restart: its floating partitions were resolved again and
            # may now start past batch 0's end, which is where they really started.
            for tp in self._floating:
                if tp in stop and begin.get(tp, -1) > stop[tp]:
                    log.info("batch 0 re-run: %s-%d starts at %d, the end batch 0 was planned with "
                             "(startingOffsets resolved to latest)", tp[0], tp[1], stop[tp])
                    begin[tp] = stop[tp]
        # Only partitions that moved are asked about (a vanished partition keeps its offset and
        # must not be queried); a partition new since `start` begins at its earliest offset.
        moved = [tp for tp in stop if begin.get(tp) != stop[tp]]
        if not moved:
            return []
        earliest = self.meta.earliest(moved)
        added = sorted(tp for tp in moved if tp not in begin)
        for tp in added:
            if earliest[tp] != 0:
                off.report_data_loss(
                    f"streaming query: partition {tp[0]}-{tp[1]} was added with its first record at offset "
                    f"{earliest[tp]} instead of 0, so offsets 0..{earliest[tp] - 1} were never read",
                    self.opts.fail_on_data_loss)
        begin = {tp: begin.get(tp, earliest[tp]) for tp in moved}
        begin = off.check_ranges(begin, {tp: stop[tp] for tp in moved}, earliest,
                                 fail_on_data_loss=self.opts.fail_on_data_loss, context="streaming query")
        return self._plan(begin, stop)

    def commit(self, end: dict) -> None:
        """Nothing to do: progress is the checkpoint; the broker keeps no state for this reader."""

    def stop(self) -> None:
        self._close_meta()

    # -- reading (executors) -----------------------------------------------------------------

    def read(self, partition: RangePartition) -> Iterator:
        return _read(self.opts, partition, self.decoder)
