"""The broker's log cleaner: log.cleaner.threads threads that pick the dirtiest compacted log,
clean it and checkpoint it, backing off log.cleaner.backoff.ms when nothing is due.

Partition logs belong to the event loop; a cleaner thread touches one only through
`on_log_thread(fn)` (the broker runs fn on the loop and waits): to measure dirtiness, to
snapshot what a pass needs and to swap each cleaned group in. Those steps are short; reading,
mapping, filtering, writing and fsyncing run on the cleaner thread, so produce and fetch are
never blocked behind a pass. With use_processes (the broker's default) that heavy part runs
in one worker process per thread (worker.py), off the broker's GIL. Memory is bounded by log.cleaner.dedupe.buffer.size (split
between the threads) and I/O by log.cleaner.io.max.bytes.per.second (shared, like Kafka's
throttler, counting bytes read and written).

A log is due when its dirty ratio (dirty bytes / cleanable bytes) reaches
min.cleanable.dirty.ratio, or a dirty segment is older than max.compaction.lag.ms. A pass
whose keys did not fit the map ends early; the log stays the dirtiest and the next round
continues from the new checkpoint.
"""
from __future__ import annotations

import logging
import os
import threading
import time

from .checkpoint import read_checkpoints, write_checkpoints
from .cleaner import CleanPass, begin_swap, cleanable, finish_swap, prepare
from .swap import CLEANED, commit_swap
from .offset_map import OffsetMap
from .throttle import Throttler

log = logging.getLogger("gregor.log.cleaner")


class CleanerStats:
    def __init__(self):
        self.passes = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.aborted_passes = 0
        self.last_pass_seconds = 0.0
        self.dirty_ratio: dict[tuple[str, int], float] = {}


class LogCleanerManager:
    """partitions() -> objects with .topic, .index, .log, .high_watermark, .deleted."""

    def __init__(self, data_dir, partitions, on_log_thread, *, threads: int = 1,
                 dedupe_buffer_size: int = 134217728, io_max_bytes_per_second: float = 1.8e308,
                 backoff_ms: int = 15000, clock=None, use_processes: bool = False):
        self.data_dir = data_dir
        self._partitions = partitions
        self._on_log_thread = on_log_thread
        self.threads = max(1, threads)
        self.buffer_per_thread = max(1 << 10, dedupe_buffer_size // self.threads)
        self.throttle = Throttler(io_max_bytes_per_second)
        self.backoff_s = backoff_ms / 1000.0
        self._clock = clock or (lambda: int(time.time() * 1000))
        self.checkpoints = read_checkpoints(data_dir)
        self.longest_loop_step = 0.0    # seconds: the longest step run on the log's thread
        self.stats = CleanerStats()
        self._lock = threading.Lock()
        self._busy: set[tuple[str, int]] = set()
        # partitions whose pass failed (a corrupt batch, an I/O error): skipped until restart,
        # as Kafka's cleaner marks them uncleanable, instead of failing every backoff
        self.uncleanable: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._workers: list[threading.Thread] = []
        self.use_processes = use_processes
        self._pools: list = []

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(OffsetMap(self.buffer_per_thread),),
                                 name=f"gregor-log-cleaner-{i}", daemon=True)
            self._workers.append(t)
            t.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        for pool in list(self._pools):
            pool.kill()                # unblocks a thread waiting for its worker
        for t in self._workers:
            t.join(timeout)
        self._workers = []
        for pool in self._pools:
            pool.kill()                # a pass in a worker: its .cleaned files are discarded
        self._pools = []

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wake(self) -> None:
        """Look for work now instead of after the backoff (tests, topic config changes)."""
        self._wake.set()

    def _run(self, offset_map: OffsetMap) -> None:
        pool = None
        if self.use_processes:
            from .worker import WorkerProcess
            pool = WorkerProcess()
            with self._lock:
                self._pools.append(pool)
            try:
                pool.start()
            except OSError as e:        # run() tries again when a pass needs it
                log.warning("could not start the cleaner's worker process: %s", e)
        while not self._stop.is_set():
            try:
                worked = self.clean_one(offset_map, pool)
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("log cleaner pass failed; backing off")
                worked = False
            if not worked:
                self._wake.wait(self.backoff_s)
                self._wake.clear()

    def _on_loop(self, fn):
        def timed():
            t = time.perf_counter()
            try:
                return fn()
            finally:
                self.longest_loop_step = max(self.longest_loop_step, time.perf_counter() - t)
        return self._on_log_thread(timed)

    # -- one round ---------------------------------------------------------------------------

    def _pick(self):
        """On the log thread: the dirtiest due partition, marked busy."""
        now = self._clock()
        best, best_c = None, None
        ratios = {}
        for p in self._partitions():
            if p.deleted or not p.log.config.compact:
                continue
            key = (p.topic, p.index)
            if key in self.uncleanable:
                continue
            c = cleanable(p.log, self.checkpoints.get(key), now, p.high_watermark)
            ratios[key] = c.ratio
            if key in self._busy or c.first_uncleanable <= c.first_dirty or not c.dirty_bytes:
                continue
            if c.ratio < p.log.config.min_cleanable_dirty_ratio and not c.overdue:
                continue
            if best is None or c.ratio > best_c.ratio:
                best, best_c = p, c
        self.stats.dirty_ratio = ratios
        if best is None:
            return None
        with self._lock:
            self._busy.add((best.topic, best.index))
        return best, best_c, prepare(best.log, best_c, now)

    def clean_one(self, offset_map: OffsetMap, pool=None) -> bool:
        """Clean the dirtiest due log, if any; returns whether one was cleaned."""
        self.longest_loop_step = 0.0
        picked = self._on_loop(self._pick)
        if picked is None:
            return False
        p, c, snap = picked
        key = (p.topic, p.index)
        swap_s = [0.0]
        try:
            def swap(group, new):
                t = time.perf_counter()
                try:
                    return swap_group(group, new)
                finally:
                    swap_s[0] += time.perf_counter() - t

            def swap_group(group, new):
                if self._stop.is_set():
                    return False
                # files are renamed here, off the loop (renames wait on the file system's
                # journal while the pass's fsyncs run); the loop only checks and swaps lists
                if not self._on_loop(lambda: not p.deleted and begin_swap(p.log, group)):
                    return False
                try:
                    commit_swap(snap.directory, new, [v.segment for v in group])
                except BaseException:
                    self._on_loop(lambda: finish_swap(p.log, group, None))
                    raise
                self._on_loop(lambda: finish_swap(p.log, group, new, close_old=False))
                for v in group:          # no longer the log's: nothing on the loop reads them
                    v.segment.close()
                return True
            try:
                if pool is None:
                    stats = CleanPass(snap, offset_map, throttle=self.throttle).run(swap)
                    stats.swap_seconds = swap_s[0]
                else:
                    stats = self._in_worker(pool, snap, swap)
                    if stats is None:
                        if self._stop.is_set():
                            _discard_pass_files(snap.directory)
                        return False
            except Exception as e:
                if self._stop.is_set():
                    # stopped mid-pass: its uncommitted files go now rather than at the
                    # next start (a committed .swap is left for recovery to finish)
                    _discard_pass_files(snap.directory)
                    return False
                self.uncleanable.add(key)
                log.error("cleaning %s-%d failed (%s); the partition is left uncleaned until "
                          "the broker restarts (check its log files)", key[0], key[1], e)
                return True
        finally:
            with self._lock:
                self._busy.discard(key)
        s = self.stats
        s.passes += 1
        s.bytes_read += stats.bytes_read
        s.bytes_written += stats.bytes_written
        s.last_pass_seconds = stats.seconds
        if stats.end_offset < 0:
            s.aborted_passes += 1
            log.info("cleaning of %s-%d stopped: its segments changed meanwhile", *key)
            return True
        with self._lock:
            self.checkpoints[key] = stats.end_offset
            live = {(q.topic, q.index) for q in self._partitions() if not q.deleted}
            write_checkpoints(self.data_dir, {k: v for k, v in self.checkpoints.items()
                                              if k in live})
        mb = stats.bytes_read / 1e6
        log.info("cleaned %s-%d: offsets %d..%d, %d segment(s) into %d, %.1f MB dirty, %.1f MB "
                 "read, %.1f MB written, %.2fs (%.1f MB/s read), dirty ratio was %.2f, longest "
                 "event-loop step %.2f ms, swaps %.1f ms%s",
                 key[0], key[1],
                 c.first_dirty, stats.end_offset - 1, stats.segments_in, stats.segments_out,
                 c.dirty_bytes / 1e6, mb, stats.bytes_written / 1e6, stats.seconds,
                 mb / stats.seconds if stats.seconds else 0.0, c.ratio,
                 self.longest_loop_step * 1000, stats.swap_seconds * 1000,
                 "; the key map filled up, another round follows" if stats.map_full else "")
        return True


    def _in_worker(self, pool, snap, swap):
        """The pass in the worker process, then each group swapped in from here."""
        from .swap import discard_cleaned
        from .worker import WorkerGone, open_cleaned, spec_of
        spec = spec_of(snap, self.buffer_per_thread, self.throttle.rate / self.threads)
        snap.close()                    # the worker opens the files itself
        try:
            stats, written = pool.run(spec)
        except WorkerGone:
            if self._stop.is_set():
                return None
            raise
        if stats is None:
            return None
        t = time.perf_counter()
        try:
            views = {v.base_offset: v for v in snap.views}
            for i, bases in enumerate(written):
                group = [views[b] for b in bases]
                new = open_cleaned(snap.directory, bases[0], snap.config)
                if new is None or not swap(group, new):
                    if new is not None:
                        new.close()
                    for rest in written[i:]:
                        discard_cleaned(snap.directory, rest[0])
                    stats.end_offset = -1
                    break
        finally:
            # the worker still holds the replaced segments' files: freeing them is its work
            pool.release()
        stats.swap_seconds = time.perf_counter() - t       # the release included
        return stats


class CleanerCollector:
    """Prometheus families for the cleaner (registered on the broker's registry)."""

    def __init__(self, manager: LogCleanerManager):
        self.m = manager

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        s = self.m.stats
        yield CounterMetricFamily("gregor_log_cleaner_passes", "Cleaning passes run",
                                  value=s.passes)
        yield CounterMetricFamily("gregor_log_cleaner_bytes_read", "Bytes read by the cleaner",
                                  value=s.bytes_read)
        yield CounterMetricFamily("gregor_log_cleaner_bytes_written",
                                  "Bytes written by the cleaner", value=s.bytes_written)
        yield GaugeMetricFamily("gregor_log_cleaner_uncleanable_partitions",
                                "Partitions skipped after a failed pass",
                                value=len(self.m.uncleanable))
        yield GaugeMetricFamily("gregor_log_cleaner_last_pass_seconds",
                                "Duration of the last pass", value=s.last_pass_seconds)
        g = GaugeMetricFamily("gregor_log_cleaner_dirty_ratio",
                              "Dirty bytes / cleanable bytes per compacted partition",
                              labels=["topic", "partition"])
        for (t, p), r in sorted(dict(s.dirty_ratio).items()):
            g.add_metric([t, str(p)], r)
        yield g


def _discard_pass_files(directory: str) -> None:
    """The `.cleaned` files of this partition's interrupted pass (one pass per partition at
    a time, so every such file is that pass's)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for n in names:
        if n.endswith(CLEANED):
            try:
                os.unlink(os.path.join(directory, n))
            except OSError:
                pass
