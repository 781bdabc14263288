"""How far a streaming query's gregor source is behind: Spark's Kafka source metrics
`minOffsetsBehindLatest`, `maxOffsetsBehindLatest` and `avgOffsetsBehindLatest`.

Spark's connector puts them into `progress.sources[i].metrics` through ReportsSourceMetrics,
a JVM interface PySpark's Python data source API does not offer, so a Python source cannot
fill that field. The figures are the same arithmetic on two offsets every progress already
carries for a gregor source: `latestOffset` (what the broker had when the batch was planned,
from reportLatestOffset) minus `endOffset` (where the batch ended), per partition. Two ways
to get them:

- `offsets_behind_latest(progress)`: for a progress (`query.lastProgress`, an item of
  `query.recentProgress`, or a listener event's `progress`): {source index: metrics};
- `OffsetsBehindLatestListener`: a StreamingQueryListener that computes them for every
  progress event of every query (`.latest[query_id]`), logs them, and calls an optional
  function (to push them to a metrics system).
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable

log = logging.getLogger("gregor.spark")

METRIC_NAMES = ("minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest")


def _offsets(raw) -> dict[tuple[str, str], int] | None:
    """{(topic, partition): offset} of a Kafka-shaped offset ({topic: {partition: offset}},
    as JSON text or parsed), or None for any other source's offset."""
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, dict):
        return None
    out = {}
    for topic, parts in raw.items():
        if not isinstance(parts, dict):
            return None
        for p, o in parts.items():
            if not isinstance(o, int) or isinstance(o, bool):
                return None
            out[(topic, str(p))] = o
    return out


def source_metrics(latest_offset, end_offset) -> dict[str, str] | None:
    """Spark's three figures (as strings, as in progress.sources[].metrics) from one source's
    latestOffset and endOffset; None when either is missing or not a Kafka-shaped offset."""
    latest, consumed = _offsets(latest_offset), _offsets(end_offset)
    if not latest or consumed is None:
        return None
    behind = [o - consumed[tp] for tp, o in latest.items() if tp in consumed]
    if not behind:
        return None
    return {"minOffsetsBehindLatest": str(min(behind)),
            "maxOffsetsBehindLatest": str(max(behind)),
            "avgOffsetsBehindLatest": str(sum(behind) / len(behind))}


def _field(obj, name: str):
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def offsets_behind_latest(progress) -> dict[int, dict[str, str]]:
    """{index of the source in progress.sources: metrics} for each source whose offsets are
    Kafka-shaped (gregor's, or Spark's own Kafka source)."""
    if isinstance(progress, str):
        progress = json.loads(progress)
    out = {}
    for i, src in enumerate(_field(progress, "sources") or []):
        m = source_metrics(_field(src, "latestOffset"), _field(src, "endOffset"))
        if m is not None:
            out[i] = m
    return out


def _listener_base():
    from pyspark.sql.streaming import StreamingQueryListener
    return StreamingQueryListener


class OffsetsBehindLatestListener(_listener_base()):
    """spark.streams.addListener(OffsetsBehindLatestListener()) computes the figures for every
    progress of every query: `.latest[str(query_id)]` holds the last ones ({source index:
    metrics}); `on_metrics(query_id, batch_id, metrics)` is called when given; each is logged
    at INFO on the "gregor.spark" logger."""

    def __init__(self, on_metrics: Callable[[str, int, dict], Any] | None = None):
        self.latest: dict[str, dict[int, dict[str, str]]] = {}
        self._on_metrics = on_metrics

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        metrics = offsets_behind_latest(progress)
        if not metrics:
            return
        query_id = str(_field(progress, "id"))
        batch_id = _field(progress, "batchId")
        self.latest[query_id] = metrics
        log.info("query %s batch %s: offsets behind latest %s", query_id, batch_id, metrics)
        if self._on_metrics is not None:
            self._on_metrics(query_id, batch_id, metrics)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
