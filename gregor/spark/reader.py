"""Batch and streaming readers of the gregor data source.

Planning happens on the driver (metadata and offsets through `TopicMetadata`); each Spark
task reads one offset range of one topic-partition with its own consumer and yields Arrow
batches. Streaming offsets are JSON {topic: {partition: next offset}}, as in Spark's Kafka
connector, so a checkpoint reads the same way in both.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)

from . import offsets as off
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


def _read(opts: SourceOptions, p: RangePartition):
    if not isinstance(p, RangePartition):
        # Spark hands a placeholder partition to read() when planning found nothing to read.
        return iter(())
    rng = off.OffsetRange(p.topic, p.partition, p.start, p.end)
    return read_range(opts.client, rng, include_headers=opts.include_headers,
                      fail_on_data_loss=opts.fail_on_data_loss, poll_timeout_ms=opts.poll_timeout_ms)


class _UsesMetadata:
    """Lazily opened driver-side metadata client, never pickled to executors."""
    opts: SourceOptions
    _meta: TopicMetadata | None = None

    @property
    def meta(self) -> TopicMetadata:
        if self._meta is None:
            self._meta = TopicMetadata(self.opts.client)
        return self._meta

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_meta"] = None
        return state

    def _partitions(self) -> list[off.TopicPartition]:
        parts = self.meta.partitions(self.opts.subscription)
        if not parts and self.opts.subscription.kind != "subscribePattern":
            names = ", ".join(self.opts.subscription.topics) or "the assigned topics"
            raise OptionError(f"no partitions found for {names}; create the topic first "
                              "(gregor topics create ...) or check the name")
        return parts

    def _close_meta(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None


class GregorBatchReader(_UsesMetadata, DataSourceReader):
    def __init__(self, opts: SourceOptions):
        self.opts = opts

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
        return _as_partitions(off.plan_ranges(start, end, self.opts.min_partitions))

    def read(self, partition: RangePartition):
        return _read(self.opts, partition)


class GregorStreamReader(_UsesMetadata, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Admission control: maxOffsetsPerTrigger caps each batch (split across
    partitions in proportion to their backlog); minOffsetsPerTrigger holds a batch back until
    that many records wait or maxTriggerDelay has passed since the last batch."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._target: off.Offsets | None = None  # Trigger.AvailableNow: never read past this
        self._last_trigger = time.monotonic()

    # -- planning (driver) -------------------------------------------------------------------

    def initialOffset(self) -> dict:
        parts = self._partitions()
        earliest = self.meta.earliest(parts)
        latest = self.meta.latest(parts)
        start = off.resolve(self.opts.starting, parts, earliest=earliest, latest=latest,
                            for_times=self.meta.offsets_for_times, option="startingOffsets",
                            timestamp_strategy=self.opts.timestamp_strategy)
        return off.to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
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
        latest = self.meta.latest(parts)
        if self._target is not None:
            latest = {tp: min(latest[tp], self._target[tp]) for tp in parts}
        new = [tp for tp in parts if tp not in start]
        earliest_new = self.meta.earliest(new) if new else {}
        current = {tp: start.get(tp, earliest_new.get(tp)) for tp in parts}
        return current, latest

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = off.from_json(start)
        current, latest = self._current(begin)
        earliest = self.meta.earliest(list(current))
        current = off.check_ranges(current, latest, earliest, fail_on_data_loss=self.opts.fail_on_data_loss,
                                   context="streaming query")
        latest = {tp: max(latest[tp], current[tp]) for tp in current}
        backlog = sum(latest[tp] - current[tp] for tp in current)
        # Trigger.AvailableNow must reach its target, so it never holds back for a minimum.
        if (not isinstance(limit, ReadAllAvailable) and self.opts.min_offsets_per_trigger
                and self._target is None):
            waited_ms = (time.monotonic() - self._last_trigger) * 1000
            if backlog < self.opts.min_offsets_per_trigger and waited_ms < self.opts.max_trigger_delay_ms:
                return start  # hold back: too few records and maxTriggerDelay not reached yet
        if isinstance(limit, ReadMaxRows):
            end = off.limit_offsets(current, latest, limit.max_rows)
        else:
            end = latest
        if backlog:
            self._last_trigger = time.monotonic()
        # Keep partitions the engine knew about (a vanished one stays at its last offset) so
        # that offsets never move backwards.
        for tp, o in begin.items():
            end.setdefault(tp, o)
        return off.to_json(end)

    def reportLatestOffset(self):
        parts = self._partitions()
        return off.to_json(self.meta.latest(parts))

    def partitions(self, start: dict, end: dict):
        begin = off.from_json(start)
        stop = off.from_json(end)
        # Only partitions that moved are asked about (a vanished partition keeps its offset and
        # must not be queried); a partition new since `start` begins at its earliest offset.
        moved = [tp for tp in stop if begin.get(tp) != stop[tp]]
        if not moved:
            return []
        earliest = self.meta.earliest(moved)
        begin = {tp: begin.get(tp, earliest[tp]) for tp in moved}
        begin = off.check_ranges(begin, {tp: stop[tp] for tp in moved}, earliest,
                                 fail_on_data_loss=self.opts.fail_on_data_loss, context="streaming query")
        return _as_partitions(off.plan_ranges(begin, stop, self.opts.min_partitions))

    def commit(self, end: dict) -> None:
        """Nothing to do: progress is the checkpoint; the broker keeps no state for this reader."""

    def stop(self) -> None:
        self._close_meta()

    # -- reading (executors) -----------------------------------------------------------------

    def read(self, partition: RangePartition) -> Iterator:
        return _read(self.opts, partition)
