"""Check a partition's aborted-transaction index (`.txnindex`) against its own log.

read_committed consumers skip aborted records because the broker hands them, with each fetch,
the (producer id, first offset) of every aborted transaction overlapping the fetched range; the
broker takes those from the `.txnindex` files. An entry missing lets aborted records through;
an entry starting too early hides committed ones. This module recomputes, from the batches of
the `.log` files alone (read-only: no recovery, no file touched), what each index file must
hold, and lists the differences:

    from gregor.testing.txn_index_check import check_txn_indexes
    problems = check_txn_indexes(["/data/broker-0", "/data/broker-1"])
    assert not problems, "\\n".join(problems)

What the log implies, batch by batch in offset order (Kafka's ProducerAppendInfo rules):
- a producer's transaction begins at its first transactional data batch after its previous
  COMMIT / ABORT marker (or the log start);
- each ABORT marker of a producer with an open transaction makes one entry, in the index file
  of the segment holding the marker: producer id, first offset (where the transaction began),
  last offset (the marker's), last stable offset (the first offset of the earliest transaction
  of another producer still open at the marker, else the marker's offset + 1);
- a marker of a producer without an open transaction (a partition added to the transaction
  but never written) makes no entry; COMMIT markers make none.

When the visible log does not hold the whole history (its first segment starts past offset 0,
the log start moved, or the log was compacted), a transaction may have begun in a batch that
is gone: an entry must still name an ABORT marker of its producer, but a first offset below
the first segment is accepted, every last stable offset is, and in a compacted log every
first offset is.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..log.files import COMPACTED_FILE, LOG_START_OFFSET_FILE
from ..protocol.primitives import DecodeError
from ..protocol.records.batch import CONTROL_ABORT, decode_batch
from ..protocol.records.header import HEADER_SIZE, parse_header

_ENTRY = struct.Struct(">hqqqq")
_LOG_SUFFIX = ".log"
_INDEX_SUFFIX = ".txnindex"


@dataclass(frozen=True, order=True)
class IndexEntry:
    last_offset: int
    producer_id: int
    first_offset: int
    last_stable_offset: int

    def __str__(self) -> str:
        return (f"(pid {self.producer_id}, first {self.first_offset}, last "
                f"{self.last_offset}, lso {self.last_stable_offset})")


def check_txn_indexes(data_dirs) -> list[str]:
    """Every partition directory under these broker data directories (or partition
    directories themselves: a directory holding `.log` files), each checked on its own.
    Returns one line of text per discrepancy, each naming its directory; [] when all agree."""
    if isinstance(data_dirs, (str, os.PathLike)):
        data_dirs = [data_dirs]
    problems: list[str] = []
    for d in data_dirs:
        for part in partition_dirs(os.fspath(d)):
            problems += check_partition_txn_index(part)
    return problems


def partition_dirs(directory: str) -> list[str]:
    """The partition directories at or one level under directory."""
    if _segment_bases(directory):
        return [directory]
    out = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and _segment_bases(path):
            out.append(path)
    return out


def check_partition_txn_index(directory: str) -> list[str]:
    """The discrepancies between one partition directory's `.txnindex` files and its log."""
    bases = _segment_bases(directory)
    expected, log_end, notes = expected_entries(directory)
    complete = _history_complete(directory, bases)
    compacted = os.path.exists(os.path.join(directory, COMPACTED_FILE))
    problems = [f"{directory}: {n}" for n in notes]
    for base in bases:
        want = expected.get(base, {})
        have, torn = _read_index(directory, base)
        where = f"{directory}/{base:020d}{_INDEX_SUFFIX}"
        if torn:
            problems.append(f"{where}: {torn} trailing bytes (a torn entry)")
        seen: set[tuple[int, int]] = set()
        for e in have:
            key = (e.producer_id, e.last_offset)
            if key in seen:
                problems.append(f"{where}: duplicate entry {e}")
                continue
            seen.add(key)
            w = want.get(key)
            if w is None:
                if e.last_offset >= log_end:
                    problems.append(f"{where}: entry {e} lies past the log end {log_end}")
                elif complete:
                    problems.append(f"{where}: entry {e} matches no ABORT marker of an "
                                    f"open transaction of pid {e.producer_id} in the log")
                elif not _is_abort_marker_in(directory, base, e):
                    problems.append(f"{where}: entry {e}: no ABORT marker of pid "
                                    f"{e.producer_id} at offset {e.last_offset} in the log")
                continue
            if complete:
                wrong = w != e
            elif compacted:             # batches may be gone anywhere: only the marker counts
                wrong = False
            else:                       # a transaction may have begun below the first segment
                wrong = w.first_offset != e.first_offset and not (
                    e.first_offset < bases[0] <= w.first_offset)
            if wrong:
                problems.append(f"{where}: entry {e} should be {w}")
        for key, w in sorted(want.items(), key=lambda kv: kv[1]):
            if key not in seen:
                problems.append(f"{where}: entry {w} is missing (the ABORT marker at offset "
                                f"{w.last_offset} has no entry)")
    return problems


def expected_entries(directory: str) -> tuple[dict[int, dict[tuple[int, int], IndexEntry]],
                                              int, list[str]]:
    """From the log's batches: {segment base: {(pid, marker offset): entry}}, the log end,
    and notes on what could not be read (a torn tail, undecodable markers)."""
    out: dict[int, dict[tuple[int, int], IndexEntry]] = {}
    open_first: dict[int, int] = {}          # pid -> first offset of its open transaction
    notes: list[str] = []
    log_end = 0
    for base in _segment_bases(directory):
        data = _read(os.path.join(directory, f"{base:020d}{_LOG_SUFFIX}"))
        log_end = max(log_end, base)
        for pos, h in _batches(data, notes, base):
            log_end = h.base_offset + h.last_offset_delta + 1
            pid = h.producer_id
            if pid < 0:
                continue
            if not h.is_control:
                if h.is_transactional and pid not in open_first:
                    open_first[pid] = h.base_offset
                continue
            first = open_first.pop(pid, None)
            if first is None:
                continue
            try:
                kind = decode_batch(data, pos, verify_crc=False).control_type
            except (DecodeError, ValueError) as e:
                notes.append(f"control batch at offset {h.base_offset} does not decode: {e}")
                continue
            if kind != CONTROL_ABORT:
                continue
            others = [f for p, f in open_first.items() if p != pid]
            lso = min(others) if others else h.base_offset + 1
            out.setdefault(base, {})[(pid, h.base_offset)] = IndexEntry(
                h.base_offset, pid, first, lso)
    return out, log_end, notes


def batch_headers(directory: str, notes: list[str] | None = None):
    """Every batch header of one partition directory's `.log` files, in offset order
    (read-only; a torn or unreadable tail ends its segment and is noted in notes)."""
    notes = [] if notes is None else notes
    for base in _segment_bases(directory):
        data = _read(os.path.join(directory, f"{base:020d}{_LOG_SUFFIX}"))
        for _pos, h in _batches(data, notes, base):
            yield h


def _batches(data: bytes, notes: list[str], base: int):
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < HEADER_SIZE:
            notes.append(f"segment {base}: {n - pos} bytes of a torn batch at its end")
            return
        try:
            h = parse_header(data, pos)
        except DecodeError as e:
            notes.append(f"segment {base}: unreadable batch at byte {pos}: {e}")
            return
        if h.size <= 0 or pos + h.size > n:
            notes.append(f"segment {base}: torn batch at byte {pos} (offset {h.base_offset})")
            return
        yield pos, h
        pos += h.size


def _is_abort_marker_in(directory: str, base: int, e: IndexEntry) -> bool:
    """Whether an ABORT marker of e's producer sits at e's last offset (an incomplete
    history cannot say where its transaction began, only that the marker exists)."""
    data = _read(os.path.join(directory, f"{base:020d}{_LOG_SUFFIX}"))
    for pos, h in _batches(data, [], base):
        if h.base_offset == e.last_offset:
            return (h.is_control and h.producer_id == e.producer_id
                    and decode_batch(data, pos, verify_crc=False).control_type == CONTROL_ABORT)
    return False


def _history_complete(directory: str, bases: list[int]) -> bool:
    if not bases or bases[0] != 0 or os.path.exists(os.path.join(directory, COMPACTED_FILE)):
        return False
    try:
        with open(os.path.join(directory, LOG_START_OFFSET_FILE)) as f:
            start = int(f.read().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        start = 0
    return start == 0


def _read_index(directory: str, base: int) -> tuple[list[IndexEntry], int]:
    try:
        data = _read(os.path.join(directory, f"{base:020d}{_INDEX_SUFFIX}"))
    except FileNotFoundError:
        return [], 0
    whole = len(data) - len(data) % _ENTRY.size
    out = []
    for pos in range(0, whole, _ENTRY.size):
        _version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        out.append(IndexEntry(last, pid, first, lso))
    return out, len(data) - whole


def _segment_bases(directory: str) -> list[int]:
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(n[:-len(_LOG_SUFFIX)]) for n in names
                  if n.endswith(_LOG_SUFFIX) and n[:-len(_LOG_SUFFIX)].isdigit())


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def count_aborted_transactions(data_dirs) -> int:
    """How many `.txnindex` entries the logs under these directories imply (so a caller can
    tell a check that compared something from one that found no ABORT marker at all)."""
    if isinstance(data_dirs, (str, os.PathLike)):
        data_dirs = [data_dirs]
    return sum(len(entries) for d in data_dirs for part in partition_dirs(os.fspath(d))
               for entries in expected_entries(part)[0].values())
