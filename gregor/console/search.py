"""Message search: a regular expression over keys, values and header names/values, evaluated by
google-re2 (linear time: no pattern can stall the console by backtracking) on a worker thread,
within a scan limit, a time budget and a result limit, and cancelled when the client goes away.

The scan reads the partitions as columns (poll_batches: no record object per scanned record)
and only builds records for the matches.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import re2

from .browse import NEWEST, OLDEST, BrowseQuery, plan_ranges
from .reader import open_consumer, scan, watermarks

FIELDS = ("key", "value", "headers")
MAX_PATTERN = 1000            # characters; a pattern is typed by a person
# re2's memory for one compiled pattern: a hostile pattern fails to compile instead of growing.
_RE2_MAX_MEM = 8 << 20


class SearchError(ValueError):
    """A pattern or option that cannot be searched with; the message says why."""


def compile_pattern(pattern: str):
    if not pattern:
        raise SearchError("the search pattern is empty")
    if len(pattern) > MAX_PATTERN:
        raise SearchError(f"the pattern is {len(pattern)} characters long; at most "
                          f"{MAX_PATTERN} are allowed")
    opts = re2.Options()
    opts.max_mem = _RE2_MAX_MEM
    opts.log_errors = False
    try:
        return re2.compile(pattern.encode(), options=opts)
    except re2.error as e:
        why = e.args[0] if e.args else ""
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise SearchError(f"invalid regular expression {pattern!r}: {why} (re2 syntax: no "
                          "backreferences or lookaround)") from None


@dataclass
class SearchQuery(BrowseQuery):
    pattern: str = ""
    fields: tuple = FIELDS
    scan_limit: int = 100_000
    budget_s: float = 10.0


@dataclass
class SearchResult:
    records: list = field(default_factory=list)
    scanned: int = 0
    elapsed_s: float = 0.0
    reason: str = "end"            # end | limit | time | cancelled | results

    @property
    def rate(self) -> float:
        return self.scanned / self.elapsed_s if self.elapsed_s > 0 else 0.0


def match_chunk(search, pr, fields) -> list[int]:
    """Indexes of the records of a chunk that match in one of the fields."""
    hits = []
    if "value" in fields:
        hits = [i for i, v in enumerate(pr.values) if v is not None and search(v)]
    seen = set(hits)
    if "key" in fields:
        for i, k in enumerate(pr.keys):
            if i not in seen and k is not None and search(k):
                hits.append(i)
                seen.add(i)
    if "headers" in fields:
        for i, hs in enumerate(pr.headers):
            if i in seen or not hs:
                continue
            for name, v in hs:
                if search(name.encode()) or (v is not None and search(v)):
                    hits.append(i)
                    seen.add(i)
                    break
    return sorted(hits)


def search(settings, q: SearchQuery, cancel: threading.Event | None = None) -> SearchResult:
    """Scan up to q.scan_limit records (spread over the partitions) from where q starts, in
    q.order, and return the first q.limit matches."""
    pattern = compile_pattern(q.pattern)
    fields = tuple(f for f in q.fields if f in FIELDS) or FIELDS
    started = time.monotonic()
    result = SearchResult()
    with open_consumer(settings, **{"max.partition.fetch.bytes": 4 << 20,
                                    "fetch.max.bytes": 16 << 20}) as c:
        tps = [(q.topic, p) for p in q.partitions]
        lo, hi = watermarks(c, tps)
        at_time = c.offsets_for_times({tp: q.timestamp_ms for tp in tps}) \
            if q.timestamp_ms is not None else {}
        # Plan as a browse whose page is the scan window of each partition.
        ranges = {}
        for i, p in enumerate(q.partitions):
            share = q.scan_limit // len(tps) + (1 if i < q.scan_limit % len(tps) else 0)
            window = BrowseQuery(q.topic, [p], q.order, q.offset, q.timestamp_ms, share)
            ranges.update(plan_ranges(window, lo, hi, at_time))
        if q.order == OLDEST and q.offset is None and q.timestamp_ms is None:
            ranges = {tp: (s, hi.get(tp, s)) for tp, (s, _) in ranges.items()}
        s = pattern.search
        found = []

        def check(pr):
            for i in match_chunk(s, pr, fields):
                found.append(pr.slice(i, i + 1).records()[0])
            # Oldest first: the first q.limit matches are the answer, stop there.
            return not (q.order == OLDEST and len(found) >= q.limit)
        outcome = scan(c, ranges, check, deadline=started + q.budget_s, cancel=cancel,
                       max_records=q.scan_limit)
    result.scanned = outcome.scanned
    result.reason = outcome.reason
    newest = q.order == NEWEST
    found.sort(key=lambda r: (r.timestamp, r.partition, r.offset) if len(tps) > 1
               else r.offset, reverse=newest)
    result.records = found[:q.limit]
    result.elapsed_s = time.monotonic() - started
    return result
