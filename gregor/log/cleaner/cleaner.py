"""One cleaning pass over one partition log.

The log is single-threaded (the broker's event loop owns it), so a pass has three parts:
- `prepare` (on the log's thread): what is cleanable, and a snapshot of what the pass needs:
  the segments below the first uncleanable offset with descriptors of their own (reads stay
  valid even if retention deletes a file meanwhile), aborted transactions, each producer's
  last batch;
- `CleanPass.run` (on a cleaner thread): map the dirty section into the OffsetMap, then
  rewrite the segments below the map's end, grouped so that small segments merge (a group
  stays within segment.bytes and the index's relative-offset range), into `.cleaned` files;
- `commit` (on the log's thread again, once per group): check the group's segments are
  still the log's, and swap (swap.py); a group whose segments changed is discarded.

The cleanable section: from the log start to the first uncleanable offset, the smallest of
the active segment's base (never cleaned), the first unstable offset (an open transaction),
the high watermark and the first segment younger than min.compaction.lag.ms. The dirty
part starts at the cleaner checkpoint. Tombstones and transaction markers are removed from
segments whose largest timestamp is older than delete.retention.ms.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from ...protocol.records.header import LOG_OVERHEAD, entry_size, parse_header
from ..segment import SCAN_CHUNK, Segment
from ..txn_index import _ENTRY as TXN_ENTRY, VERSION as TXN_VERSION, SUFFIX as TXN_SUFFIX
from .decide import Decider
from .offset_map import OffsetMap
from .swap import CLEANED, commit_swap, discard_cleaned

log = logging.getLogger("gregor.log.cleaner")

# Kafka's Log.MaxRelativeOffset: a merged segment's offsets must fit its index's uint32.
MAX_RELATIVE_OFFSET = (1 << 31) - 1


@dataclass
class Cleanable:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    overdue: bool             # max.compaction.lag.ms passed for a dirty record

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def largest_timestamp(seg: Segment) -> int:
    if seg.max_timestamp >= 0:
        return seg.max_timestamp
    try:
        return int(os.stat(seg.log_path).st_mtime * 1000)
    except OSError:
        return 0


def cleanable(log_, checkpoint: int | None, now_ms: int,
              high_watermark: int | None = None) -> Cleanable:
    """Where the dirty section starts and ends, and its size (on the log's thread)."""
    cfg = log_.config
    segs = log_.segments
    start = log_.log_start_offset
    first_dirty = start if checkpoint is None or not start <= checkpoint <= log_.log_end_offset \
        else checkpoint
    bound = segs[-1].base_offset
    fuo = log_.first_unstable_offset()
    if fuo is not None:
        bound = min(bound, fuo)
    if high_watermark is not None:
        bound = min(bound, high_watermark)
    if cfg.min_compaction_lag_ms > 0:
        for seg in segs:
            if seg.base_offset >= bound:
                break
            if largest_timestamp(seg) > now_ms - cfg.min_compaction_lag_ms:
                bound = min(bound, seg.base_offset)
                break
    clean = dirty = 0
    overdue = False
    for seg in segs[:-1]:
        if seg.base_offset >= bound:
            break
        if seg.next_offset <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
            if (seg.size and cfg.max_compaction_lag_ms < (1 << 62)
                    and seg.first_batch_timestamp >= 0
                    and now_ms - seg.first_batch_timestamp > cfg.max_compaction_lag_ms):
                overdue = True
    return Cleanable(first_dirty, max(bound, first_dirty), clean, dirty, overdue)


@dataclass
class SegmentView:
    """A segment as the pass sees it: its own descriptor and its size at prepare time."""
    segment: Segment
    base_offset: int
    next_offset: int
    size: int
    fd: int
    max_timestamp: int
    txn_entries: list = field(default_factory=list)


@dataclass
class Snapshot:
    directory: str
    config: object
    first_dirty: int
    first_uncleanable: int
    views: list[SegmentView]
    aborted: list[tuple[int, int, int]]
    producer_last: dict[int, int]
    now_ms: int

    def close(self) -> None:
        for v in self.views:
            if v.fd >= 0:
                os.close(v.fd)
                v.fd = -1


def prepare(log_, c: Cleanable, now_ms: int) -> Snapshot:
    """On the log's thread: what the pass needs, independent of later appends."""
    views = []
    by_base = {}
    for e in log_.txn_index.entries:
        by_base.setdefault(log_.txn_index._segment_of.get(e), []).append(e)
    for seg in log_.segments[:-1]:
        if seg.base_offset >= c.first_uncleanable:
            break
        views.append(SegmentView(seg, seg.base_offset, seg.next_offset, seg.size,
                                 os.open(seg.log_path, os.O_RDONLY), largest_timestamp(seg),
                                 by_base.get(seg.base_offset, [])))
    aborted = [(e.producer_id, e.first_offset, e.last_offset) for e in log_.txn_index.entries]
    producers = log_.producer_state.producers
    last = {pid: e.last_offset for pid, e in producers.items() if e.last_offset >= 0}
    return Snapshot(log_.dir, log_.config, c.first_dirty, c.first_uncleanable, views, aborted,
                    last, now_ms)


def iter_batches(fd: int, size: int, start: int = 0, throttle=None):
    """(buffer, position, header) of every batch in the first size bytes of fd, read in
    chunks of SCAN_CHUNK (a batch larger than a chunk is read whole)."""
    pos = start
    while pos < size:
        chunk = os.pread(fd, min(SCAN_CHUNK, size - pos), pos)
        if throttle is not None:
            throttle(len(chunk))
        p = 0
        while p + LOG_OVERHEAD <= len(chunk):
            n = entry_size(chunk, p)
            if n is None or p + n > len(chunk):
                break
            yield chunk, p, parse_header(chunk, p)
            p += n
        if p == 0:              # one batch larger than the chunk
            n = entry_size(os.pread(fd, LOG_OVERHEAD, pos), 0)
            big = os.pread(fd, n, pos)
            if throttle is not None:
                throttle(len(big))
            yield big, 0, parse_header(big, 0)
            p = n
        pos += p


_last_yield = [0.0]


def _yield_gil() -> None:
    # On a thread the pass shares the interpreter with the event loop: without a release the
    # loop could wait a whole switch interval (5 ms) for the GIL, which produce p99 would
    # show. sleep(0) releases it but is a syscall (~50-80 us): at most once a millisecond.
    now = time.perf_counter()
    if now - _last_yield[0] > 0.001:
        time.sleep(0)
        _last_yield[0] = now


def _no_yield() -> None:
    pass


# A worker process's pass looks up, at most every PACE_RUN_S between batches, whether some
# thread waits for a CPU, and if so sleeps PACE_PAUSE_S. SCHED_IDLE alone does not keep a busy
# worker out of the broker's way on a small machine (measured on 2 cores,
# docs/findings/cleaner.md): a CPU that runs an idle-policy task never goes idle, so it never
# pulls over a broker or client thread queued behind another task on the other CPU (waits of
# 3-15 ms were traced), and a thread woken onto the worker's CPU was seen waiting for the next
# scheduler tick (4 ms at HZ=250). A pause lets the CPU go idle, so whatever waits gets it
# within about PACE_RUN_S (a batch is the finest step: ~1 ms for 256 KiB); when nothing waits
# the pass runs on. Without a way to tell (no /proc/loadavg) it pauses every PACE_RUN_S.
PACE_RUN_S = 0.0005
PACE_PAUSE_S = 0.00005


def cpu_wanted():
    """A function answering whether more threads are runnable than there are CPUs, i.e.
    someone waits for one (the caller counts itself), from the running count of
    /proc/loadavg (Linux; ~1 us a call); None where that file does not exist."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    cpus = os.cpu_count() or 1

    def wanted() -> bool:
        try:                    # "0.52 0.58 0.59 3/214 12345": 3 runnable now
            running = os.pread(fd, 128, 0).split()[3].split(b"/")[0]
            return int(running) > cpus
        except (OSError, IndexError, ValueError):
            return True
    wanted.close = lambda: os.close(fd)
    return wanted


class Pacer:
    """Called between batches: once `run` seconds of work went by, sleeps `pause` seconds if
    wanted() (None: always)."""

    def __init__(self, run: float = PACE_RUN_S, pause: float = PACE_PAUSE_S,
                 clock=time.perf_counter, sleep=time.sleep, wanted=None):
        self.run, self.pause = run, pause
        self._clock, self._sleep, self._wanted = clock, sleep, wanted
        self._since = clock()
        self.pauses = 0

    def __call__(self) -> None:
        now = self._clock()
        if now - self._since < self.run:
            return
        self._since = now
        if self._wanted is None or self._wanted():
            self._sleep(self.pause)
            self.pauses += 1
            self._since = self._clock()


@dataclass
class PassStats:
    bytes_read: int = 0
    bytes_written: int = 0
    segments_in: int = 0
    segments_out: int = 0
    map_full: bool = False
    end_offset: int = -1
    seconds: float = 0.0
    swap_seconds: float = 0.0      # the broker's part: opening and swapping the groups in


class CleanPass:
    """Map the dirty section, then write and commit the cleaned groups."""

    def __init__(self, snap: Snapshot, offset_map: OffsetMap, *, throttle=None,
                 shares_gil: bool = True, pace=None):
        # shares_gil=False: a worker process, where there is no event loop to yield to; it
        # passes a Pacer instead (pace is called between batches)
        self.yield_gil = _yield_gil if shares_gil else (pace or _no_yield)
        self.snap = snap
        self.map = offset_map
        self.throttle = throttle
        self.stats = PassStats()
        self.decider: Decider | None = None

    def _throttle(self, n: int) -> None:
        self.stats.bytes_read += n
        if self.throttle is not None:
            self.throttle(n)

    def build_map(self) -> int:
        """Returns the end offset: records below it were mapped."""
        snap = self.snap
        self.map.clear()
        d = self.decider = Decider(self.map, snap.aborted, snap.producer_last)
        self.map.latest_offset = snap.first_dirty - 1
        for v in snap.views:
            if v.next_offset <= snap.first_dirty:
                continue
            pos = 0
            if snap.first_dirty > v.base_offset and v.segment is not None:   # sealed index
                pos = v.segment.offset_index.lookup(snap.first_dirty - v.base_offset)
            for buf, p, h in iter_batches(v.fd, v.size, pos, self._throttle):
                if h.last_offset < snap.first_dirty:
                    continue
                if h.base_offset >= snap.first_uncleanable:
                    break
                self.yield_gil()
                if not d.map_batch(buf, p, h):
                    self.stats.map_full = True
                    break
            if self.stats.map_full:
                break
        end = d.finish_mapping()
        self.stats.end_offset = end
        return end

    def groups(self, end: int) -> list[list[SegmentView]]:
        cfg = self.snap.config
        out: list[list[SegmentView]] = []
        for v in self.snap.views:
            if v.base_offset >= end:
                break
            g = out[-1] if out else None
            if (g is not None and sum(x.size for x in g) + v.size <= cfg.segment_bytes
                    and v.next_offset - 1 - g[0].base_offset <= MAX_RELATIVE_OFFSET
                    and sum(x.size for x in g) + v.size < (1 << 31)):
                g.append(v)
            else:
                out.append([v])
        return out

    def write_group(self, group: list[SegmentView]) -> Segment:
        """The group's cleaned segment, in durable `.cleaned` files."""
        snap, d = self.snap, self.decider
        cfg = snap.config
        base = group[0].base_offset
        discard_cleaned(snap.directory, base)
        out = Segment(snap.directory, base, index_interval=cfg.index_interval_bytes,
                      max_index_entries=cfg.max_index_entries, now_ms=snap.now_ms,
                      suffix=CLEANED)
        out.allow_gaps = True
        out.open_indexes_for_append()
        horizon = snap.now_ms - cfg.delete_retention_ms
        pending, headers, pending_bytes = [], [], 0
        for v in group:
            past = v.max_timestamp < horizon
            for buf, p, h in iter_batches(v.fd, v.size, 0, self._throttle):
                self.yield_gil()
                kept = d.filter_batch(buf, p, h, past)
                if kept is None:
                    continue
                h = parse_header(kept, 0)
                pending.append(kept)
                headers.append(h)
                pending_bytes += len(kept)
                if pending_bytes >= SCAN_CHUNK:
                    self._write(out, pending, headers)
                    pending, headers, pending_bytes = [], [], 0
        if pending:
            self._write(out, pending, headers)
        entries = [e for v in group for e in v.txn_entries]
        # written even when empty: swap.py relies on it to finish a swap after a crash
        with open(out.log_path.replace(".log" + CLEANED, TXN_SUFFIX + CLEANED), "wb") as f:
            for e in sorted(entries):
                f.write(TXN_ENTRY.pack(TXN_VERSION, e.producer_id, e.first_offset,
                                       e.last_offset, e.last_stable_offset))
            f.flush()
            if entries:
                os.fdatasync(f.fileno())
        out.seal()
        # Only the data is made durable before the swap (one fsync per group, each a flush of
        # the device's cache): the index files are a cache that recovery checks and
        # rebuilds, and an empty .txnindex carries nothing.
        os.fdatasync(out.fd)
        for fd in out.dup_fds()[1:]:
            os.close(fd)
        # the new names become durable with the directory fsync of the swap's commit point
        self.stats.segments_in += len(group)
        self.stats.segments_out += 1
        return out

    def _write(self, out: Segment, parts: list, headers: list) -> None:
        buf = b"".join(parts)
        out.append(buf, headers)
        self.stats.bytes_written += len(buf)
        if self.throttle is not None:
            self.throttle(len(buf))

    def run(self, commit) -> PassStats:
        """The whole pass; commit(group_views, new_segment) -> bool runs the swap (on the
        log's thread in the broker) and returns False when the group changed meanwhile."""
        t0 = time.monotonic()
        try:
            end = self.build_map()
            for group in self.groups(end):
                new = self.write_group(group)
                if not commit(group, new):
                    new.close()
                    discard_cleaned(self.snap.directory, new.base_offset)
                    self.stats.end_offset = -1
                    break
        finally:
            self.snap.close()
            self.stats.seconds = time.monotonic() - t0
        return self.stats


def still_current(log_, group: list[SegmentView]) -> bool:
    """The group's segments are still the log's, unchanged (retention or truncation did not
    touch them while the pass ran)."""
    try:
        i = next(k for k, s in enumerate(log_.segments) if s is group[0].segment)
    except StopIteration:
        return False
    segs = log_.segments[i:i + len(group)]
    return (len(segs) == len(group) and i + len(group) < len(log_.segments)
            and all(s is v.segment and s.size == v.size and s.fd >= 0
                    for s, v in zip(segs, group)))


def begin_swap(log_, group: list[SegmentView]) -> bool:
    """On the log's thread: check the group is still the log's and pin its segments (retention
    leaves pinned segments alone until finish_swap) while their files are swapped."""
    if not still_current(log_, group) or log_.swapping:
        return False
    log_.swapping = {id(v.segment) for v in group}
    return True


def finish_swap(log_, group: list[SegmentView], new: Segment | None, *,
                close_old: bool = True) -> None:
    """On the log's thread, after commit_swap: the new segment replaces the group in memory
    (new=None: the file swap failed; only unpin). close_old=False leaves closing the old
    segments to the caller: closing the last descriptor of a removed file frees its blocks,
    which takes milliseconds for a large segment and should not happen on the event loop."""
    log_.swapping = set()
    if new is None:
        return
    old = [v.segment for v in group]
    i = log_.segments.index(old[0])
    log_.segments[i:i + len(old)] = [new]
    log_._bases = [s.base_offset for s in log_.segments]
    if close_old:
        for seg in old:
            seg.close()
    ti = log_.txn_index
    gone = {s.base_offset for s in old}
    for e, b in list(ti._segment_of.items()):
        if b in gone:
            ti._segment_of[e] = new.base_offset


def commit(log_, group: list[SegmentView], new: Segment, hook=None, *,
           sync_dir: bool = True) -> bool:
    """The whole swap on the calling (log's) thread: tests and tools."""
    if not begin_swap(log_, group):
        return False
    try:
        commit_swap(log_.dir, new, [v.segment for v in group], hook, sync_dir=sync_dir)
    except BaseException:
        finish_swap(log_, group, None)
        raise
    finish_swap(log_, group, new)
    return True


def clean_log(log_, checkpoint: int | None, offset_map: OffsetMap, *, now_ms: int | None = None,
              high_watermark: int | None = None, throttle=None, hook=None) -> PassStats:
    """One whole pass on the calling thread (tests, tools): returns the stats, whose
    end_offset is the new checkpoint (-1 when nothing was cleaned)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    c = cleanable(log_, checkpoint, now, high_watermark)
    if c.first_uncleanable <= c.first_dirty:
        return PassStats()
    snap = prepare(log_, c, now)
    return CleanPass(snap, offset_map, throttle=throttle).run(
        lambda group, new: commit(log_, group, new, hook))
