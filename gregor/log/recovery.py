"""Opening a partition directory: loading segments after a clean stop, recovering after an
unclean one.

Files besides the segments and snapshots:
- `clean-shutdown`: written by Log.close() after everything was flushed; removed when the log
  is opened. Its absence at open means the previous run did not stop cleanly.
- `recovery-point`: decimal offset below which every byte is known to be fsynced. After an
  unclean stop, segments that end at or below it are trusted (their index files are loaded
  and only their tails are checked); the segment containing it and all later ones are scanned.
- `log-start-offset`: decimal log start offset (moved by retention and DeleteRecords).
- `compacted`: the log was cleaned once; gaps between batches are then not corruption.

Recovery checks each batch's structure (magic, lengths), CRC-32C and offsets (each batch must
start at or after where the previous one ended: compaction leaves gaps), truncates the segment at the
first invalid or partial batch, deletes every later segment, rebuilds the indexes of scanned
segments, and logs what was cut. The producer state is then rebuilt by the Log from its latest
snapshot at or below the new log end plus a replay of the batches after it.

Not detectable: a flipped bit in a batch's partition_leader_epoch (bytes 12-15), the only
header field covered neither by the CRC nor by the offset checks.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from .config import LogConfig
from .files import (CLEAN_SHUTDOWN_FILE, COMPACTED_FILE, LOG_START_OFFSET_FILE,
                    RECOVERY_POINT_FILE, fsync_dir)
from .index import IndexCorrupt
from .segment import LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX, Segment

log = logging.getLogger("gregor.log")



@dataclass
class RecoveryReport:
    clean: bool
    segments_scanned: int = 0
    bytes_truncated: int = 0
    segments_deleted: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class LoadedLog:
    segments: list[Segment]
    log_start_offset: int
    recovery_point: int
    report: RecoveryReport
    # the directory did not exist: its entry in the parent is not durable yet (Log's first
    # fsync round makes it so, before any data in it is promised)
    created: bool = False


def read_checkpoint(directory: str, name: str) -> int | None:
    """An offset file's value, or None when missing or unreadable (callers then fall back to
    the safe choice: scan more, trust less)."""
    try:
        with open(os.path.join(directory, name), "rb") as f:
            return int(f.read().strip() or b"x")
    except (OSError, ValueError):
        return None


def write_checkpoint(directory: str, name: str, value: int, *, fsync: bool = False) -> None:
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"%d\n" % value)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def mark_clean_shutdown(directory: str) -> None:
    with open(os.path.join(directory, CLEAN_SHUTDOWN_FILE), "wb") as f:
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(directory)


def _segment_bases(directory: str) -> list[int]:
    bases = []
    for name in os.listdir(directory):
        stem, ext = os.path.splitext(name)
        if ext == ".tmp":
            os.unlink(os.path.join(directory, name))     # a checkpoint write that never finished
        elif ext == LOG_SUFFIX and stem.isdigit():
            bases.append(int(stem))
    for name in os.listdir(directory):                     # indexes whose log is gone
        stem, ext = os.path.splitext(name)
        if ext in (INDEX_SUFFIX, TIMEINDEX_SUFFIX) and stem.isdigit() and int(stem) not in bases:
            os.unlink(os.path.join(directory, name))
    return sorted(bases)


def load_segments(directory: str, config: LogConfig, now_ms: int) -> LoadedLog:
    created = not os.path.isdir(directory)
    os.makedirs(directory, exist_ok=True)
    marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
    clean = os.path.exists(marker)
    report = RecoveryReport(clean=clean)
    persisted_start = read_checkpoint(directory, LOG_START_OFFSET_FILE)
    recovery_point = read_checkpoint(directory, RECOVERY_POINT_FILE)
    if recovery_point is None or recovery_point < 0:
        recovery_point = 0

    from .cleaner.swap import recover_swaps
    for problem in recover_swaps(directory, config, now_ms):
        _note(report, problem)
    bases = _segment_bases(directory)
    # a log that is or was compacted has gaps between batches and between segments
    allow_gaps = config.compact or os.path.exists(os.path.join(directory, COMPACTED_FILE))
    segments: list[Segment] = []
    expected = None
    for i, base in enumerate(bases):
        seg = Segment(directory, base, index_interval=config.index_interval_bytes,
                      max_index_entries=config.max_index_entries, now_ms=now_ms)
        seg.allow_gaps = allow_gaps
        if expected is not None and (base < expected or (base > expected and not allow_gaps)):
            _note(report, f"segment {base} does not continue the log at offset {expected}")
            seg.close()
            _delete_from(directory, config, bases[i:], report, now_ms)
            break
        below_recovery_point = i + 1 < len(bases) and bases[i + 1] <= recovery_point
        scanned = False
        if clean or below_recovery_point:
            try:
                seg.load_indexes()
            except IndexCorrupt as e:
                _note(report, f"segment {base}: {e}; rebuilding it from the log")
                scanned = True
        else:
            scanned = True
        cut = False
        if scanned:
            report.segments_scanned += 1
            size_before = seg.size
            result = seg.recover(expected_offset=base)
            if result.error is not None:
                cut = True
                lost = size_before - result.end_position
                report.bytes_truncated += lost
                _note(report, f"segment {base}: {result.error}; truncated {lost} bytes at byte "
                              f"{result.end_position}, log now ends at offset "
                              f"{result.next_offset}")
        segments.append(seg)
        expected = seg.next_offset
        if cut:
            _delete_from(directory, config, bases[i + 1:], report, now_ms)
            break

    if not segments:
        start = max(persisted_start or 0, 0)
        segments.append(Segment(directory, start, index_interval=config.index_interval_bytes,
                                max_index_entries=config.max_index_entries, now_ms=now_ms))
    log_start = max(persisted_start or 0, segments[0].base_offset)
    if not clean and not created:
        # What was read back may still sit only in the page cache (the process died, the
        # machine did not): make it durable before trusting it as below the recovery point,
        # names included: the segments' in this directory, this directory's in its parent.
        # (A directory created just now holds one empty segment: nothing was read back, and
        # the log's first fsync round covers its names before any data is promised.)
        for seg in segments:
            if seg.base_offset >= _containing_base(segments, recovery_point):
                seg.open_indexes_for_append()
                for fd in seg.dup_fds():
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                seg.seal()
        fsync_dir(directory)
        fsync_dir(os.path.dirname(os.path.abspath(directory)))
        recovery_point = segments[-1].next_offset
    if clean or created:
        recovery_point = segments[-1].next_offset
    segments[-1].open_indexes_for_append()
    if os.path.exists(marker):
        os.unlink(marker)
    return LoadedLog(segments, log_start, recovery_point, report, created=created)


def _containing_base(segments: list[Segment], offset: int) -> int:
    base = segments[0].base_offset
    for seg in segments:
        if seg.base_offset <= offset:
            base = seg.base_offset
    return base


def _delete_from(directory: str, config: LogConfig, bases: list[int], report: RecoveryReport,
                 now_ms: int) -> None:
    for base in bases:
        seg = Segment(directory, base, index_interval=config.index_interval_bytes,
                      max_index_entries=config.max_index_entries, now_ms=now_ms)
        report.bytes_truncated += seg.size
        report.segments_deleted.append(base)
        _note(report, f"deleted segment {base} ({seg.size} bytes) after the point of corruption")
        seg.delete()


def _note(report: RecoveryReport, message: str) -> None:
    report.problems.append(message)
    log.warning("log recovery: %s", message)
