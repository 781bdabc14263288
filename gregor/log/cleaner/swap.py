"""Putting a cleaned segment in place of the segments it replaces, crash-safely.

The files of the segment being built end in `.cleaned` (`<base>.log.cleaned`, `.index.cleaned`,
`.timeindex.cleaned`, `.txnindex.cleaned`); the `.log` (and a non-empty `.txnindex`) is
made durable (the index files are a cache that recovery checks and rebuilds), then:

1. every `.cleaned` file is renamed to `.swap`, the `.log` last: that rename is the commit
   point (a `.log.swap` exists only once all the new files are complete and durable);
2. each replaced segment other than the first: its `.log` and `.txnindex` are renamed to
   `.deleted`, its index files removed;
3. the `.swap` files are renamed over the final names, the `.log` last (this replaces the
   first old segment, which has the same base offset), then the `.deleted` files go.

Recovery at open (`recover_swaps`, before segments are loaded):
- `.cleaned` files, and `.swap` files without their `.log.swap`, are deleted: the pass never
  committed, the old segments are all there;
- a `.log.swap` that scans cleanly (CRC, structure, offsets) is completed: old segments whose
  base offset lies inside it and every `.deleted` file are removed, the `.swap` files renamed;
- a `.log.swap` that does not (a torn or corrupt file) is discarded and the `.deleted` files
  renamed back: the log is as it was before the pass;
- `.deleted` files without a swap belong to a completed swap and are removed.
So a kill at any point leaves either the old segments or the new one visible, never neither
and never both.
"""
from __future__ import annotations

import logging
import os

from ..files import COMPACTED_FILE, fsync_dir
from ..segment import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, Segment, segment_name
from ..txn_index import SUFFIX as TXN_SUFFIX

log = logging.getLogger("gregor.log.cleaner")

CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
_EXTS = (INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXN_SUFFIX, LOG_SUFFIX)     # .log last: commit


class CrashPoint(Exception):
    """Raised by tests' hooks to stop a swap between two steps."""


def _stem(directory: str, base: int) -> str:
    return os.path.join(directory, segment_name(base))


def _rename(src: str, dst: str) -> None:
    try:
        os.replace(src, dst)
    except FileNotFoundError:
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def commit_swap(directory: str, new: Segment, old: list[Segment], hook=None, *,
                sync_dir: bool = True) -> None:
    """Steps 1-3 above, on files only. new's files end in `.cleaned` and are durable; old are
    the segments it replaces (old[0] has new's base offset); their descriptors stay open,
    so the log keeps serving reads from them until it swaps its segment list (the caller
    closes them). hook(step) lets tests stop in between. sync_dir=False skips the directory
    fsyncs (a process crash needs none to see renames; tests that only kill use it)."""
    step = hook or (lambda name: None)
    marker = os.path.join(directory, COMPACTED_FILE)
    if not os.path.exists(marker):
        open(marker, "wb").close()
    base = new.base_offset
    stem = _stem(directory, base)
    step("cleaned")
    for ext in _EXTS:
        _rename(stem + ext + CLEANED, stem + ext + SWAP)
        if ext != LOG_SUFFIX:
            step(f"renamed {ext}.swap")
    if sync_dir:
        fsync_dir(directory)
    step("committed")
    for seg in old[1:]:
        s = _stem(directory, seg.base_offset)
        for ext in (LOG_SUFFIX, TXN_SUFFIX):
            _rename(s + ext, s + ext + DELETED)
        for ext in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            _unlink(s + ext)
        step(f"deleted {seg.base_offset}")
    for ext in _EXTS:
        _rename(stem + ext + SWAP, stem + ext)
        step(f"final {ext}")
    _drop_empty_txn_index(stem)
    new.log_path = stem + LOG_SUFFIX
    new.offset_index.path = stem + INDEX_SUFFIX
    new.time_index.path = stem + TIMEINDEX_SUFFIX
    for seg in old[1:]:
        s = _stem(directory, seg.base_offset)
        for ext in (LOG_SUFFIX, TXN_SUFFIX):
            _unlink(s + ext + DELETED)
    # no directory fsync here: should a power loss undo these last renames, recovery finds
    # the committed .swap and finishes it again (one journal commit per group is enough)


def _drop_empty_txn_index(stem: str) -> None:
    # the new segment always has a .txnindex (maybe empty) so that recovery knows a missing
    # .txnindex.swap was renamed already; an empty one is not kept
    try:
        if os.path.getsize(stem + TXN_SUFFIX) == 0:
            os.unlink(stem + TXN_SUFFIX)
    except FileNotFoundError:
        pass


def discard_cleaned(directory: str, base: int) -> None:
    stem = _stem(directory, base)
    for ext in _EXTS:
        _unlink(stem + ext + CLEANED)


def recover_swaps(directory: str, config, now_ms: int) -> list[str]:
    """Finish or undo interrupted swaps (see the module doc); returns what it did."""
    if not os.path.isdir(directory):
        return []
    notes = []
    names = os.listdir(directory)
    cleaned = [n for n in names if n.endswith(CLEANED)]
    for name in cleaned:
        _unlink(os.path.join(directory, name))
    if cleaned:
        notes.append(f"removed {len(cleaned)} file(s) of an unfinished cleaning pass")
    swaps = sorted(int(n.split(".")[0]) for n in names
                   if n.endswith(LOG_SUFFIX + SWAP) and n.split(".")[0].isdigit())
    for name in names:                  # index swaps of a pass that never committed
        if name.endswith(SWAP) and name.split(".")[0].isdigit() \
                and int(name.split(".")[0]) not in swaps:
            _unlink(os.path.join(directory, name))
    deleted_bases = sorted(int(n.split(".")[0]) for n in names
                           if n.endswith(LOG_SUFFIX + DELETED) and n.split(".")[0].isdigit())
    for base in swaps:
        seg = Segment(directory, base, index_interval=config.index_interval_bytes,
                      max_index_entries=config.max_index_entries, now_ms=now_ms, suffix=SWAP)
        seg.allow_gaps = True
        result = seg.scan(0, base, -1, verify_crc=True, add_index_entries=False)
        seg.close()
        stem = _stem(directory, base)
        if result.error is None:
            end = result.next_offset
            for name in os.listdir(directory):
                stem_digits, _, ext = name.partition(".")
                if (stem_digits.isdigit() and base < int(stem_digits) < end
                        and "." + ext in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX,
                                          TXN_SUFFIX)):
                    _unlink(os.path.join(directory, name))
            for ext in _EXTS:
                _rename(stem + ext + SWAP, stem + ext)
            _drop_empty_txn_index(stem)
            notes.append(f"finished the swap of cleaned segment {base} (up to offset {end})")
        else:
            for ext in _EXTS:
                _unlink(stem + ext + SWAP)
            for b in deleted_bases:
                s = _stem(directory, b)
                for ext in (LOG_SUFFIX, TXN_SUFFIX):
                    _rename(s + ext + DELETED, s + ext)
            deleted_bases = []
            notes.append(f"discarded cleaned segment {base} ({result.error}); kept the "
                         f"segments it would have replaced")
    for name in os.listdir(directory):
        if name.endswith(DELETED):
            _unlink(os.path.join(directory, name))
    if swaps:
        fsync_dir(directory)
    for n in notes:
        log.warning("log %s: %s", directory, n)
    return notes
