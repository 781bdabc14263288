"""What survives cleaning, batch by batch: sans-I/O (bytes in, bytes out, no files, no clock).

A pass first maps the dirty section (`Decider.map_batch`: each key's last offset), then
rewrites every segment below the map's end (`Decider.filter_batch`). A record survives when

- its batch is not part of an aborted transaction (those go whole, and never enter the map),
- it has a key (Kafka's cleaner drops keyless records: compaction has no meaning for them),
- no later record of its key is in the map, and
- it is not a tombstone (null value) in a segment past the delete horizon.

Records at or past the map's end are kept as they are (the map knows nothing of their keys'
later values yet). A batch keeps its base offset, last offset delta, producer id, epoch,
base sequence and base timestamp, and the surviving records keep their bytes (offset and
timestamp deltas are relative to those), so offsets and timestamps never change and gaps
appear instead. A batch left with no record is dropped, unless it is the last batch of its
producer: then it stays empty, so the producer's last sequence survives a state rebuild.
Transaction markers stay while their transaction still has records in the log or their
segment is within the delete horizon; then they go like tombstones.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ...protocol.compression import NONE
from ...protocol.records.encoding import assemble_batch
from ...protocol.records.fields import locate_fields
from ...protocol.records.errors import CorruptRecordsError
from ...protocol.records.header import TIMESTAMP_TYPE_BIT, BatchHeader, crc_ok
from ...protocol.records.parsing import records_section
from .offset_map import OffsetMap, digests_of

# Records sections are decompressed up to this size: a batch is at most max.message.bytes
# on the way in, and decompression ratios beyond 64x are not real data.
MAX_DECOMPRESSED = 256 << 20


class Records:
    """The fields of one batch's records (numpy arrays) and their keys."""
    __slots__ = ("data", "starts", "ends", "offsets", "ts_delta", "keys", "value_len")

    def __init__(self, buf, pos: int, h: BatchHeader):
        self.data = data = records_section(buf, pos, h, MAX_DECOMPRESSED)
        n = h.records_count
        if n <= 0:
            empty = np.empty(0, dtype=np.int64)
            self.starts = self.ends = self.offsets = self.ts_delta = self.value_len = empty
            self.keys = []
            return
        f = locate_fields(data, n)
        self.ends = f.ends
        self.starts = np.concatenate(([0], f.ends[:-1]))
        self.offsets = f.offset_delta + h.base_offset
        self.ts_delta = f.timestamp_delta
        self.value_len = f.value_len
        kpos, klen = f.key_pos.tolist(), f.key_len.tolist()
        self.keys = [data[a:a + n] if n >= 0 else None for a, n in zip(kpos, klen)]


def _keyed(rec: Records) -> tuple[np.ndarray, list]:
    idx = [i for i, k in enumerate(rec.keys) if k is not None]
    return np.asarray(idx, dtype=np.int64), [rec.keys[i] for i in idx]


class Decider:
    """The decisions of one cleaning pass.

    aborted: (producer_id, first_offset, marker_offset) of aborted transactions;
    producer_last: producer id -> offset of its last batch in the log;
    end_offset: filled in after mapping (the map's latest offset + 1)."""

    def __init__(self, offset_map: OffsetMap, aborted=(), producer_last=None):
        self.map = offset_map
        self._aborted: dict[int, list[tuple[int, int]]] = {}
        for pid, first, last in sorted(aborted, key=lambda a: a[1]):
            self._aborted.setdefault(pid, []).append((first, last))
        self._aborted_firsts = {pid: [f for f, _ in v] for pid, v in self._aborted.items()}
        self.producer_last = producer_last or {}
        self.end_offset = -1
        self._txn_has_data: dict[int, bool] = {}
        # what the pass did, for metrics and its log line
        self.records_read = 0
        self.records_kept = 0
        self.tombstones_dropped = 0
        self.aborted_dropped = 0

    def is_aborted(self, h: BatchHeader) -> bool:
        """A transactional data batch inside an aborted transaction's range."""
        if not h.is_transactional or h.is_control:
            return False
        ranges = self._aborted.get(h.producer_id)
        if not ranges:
            return False
        i = bisect_right(self._aborted_firsts[h.producer_id], h.base_offset) - 1
        while i >= 0:
            first, last = ranges[i]
            if first <= h.base_offset < last:
                return True
            i -= 1
        return False

    # -- mapping -----------------------------------------------------------------------------

    def map_batch(self, buf, pos: int, h: BatchHeader) -> bool:
        """Put the batch's keys in the map; False when the map is full (the pass ends before
        this batch)."""
        _check(buf, pos, h)
        if h.is_control or self.is_aborted(h) or h.records_count <= 0:
            return self.map.try_put(*_EMPTY, h.last_offset)
        rec = Records(buf, pos, h)
        idx, keys = _keyed(rec)
        hi, lo = digests_of(keys)
        return self.map.try_put(hi, lo, rec.offsets[idx] if len(idx) else _EMPTY[2],
                                h.last_offset)

    def finish_mapping(self) -> int:
        self.end_offset = self.map.latest_offset + 1
        return self.end_offset

    # -- filtering ---------------------------------------------------------------------------

    def filter_batch(self, buf, pos: int, h: BatchHeader, past_horizon: bool):
        """The batch as it should be written: the original bytes (unchanged), new bytes, or
        None (dropped)."""
        _check(buf, pos, h)
        original = buf[pos:pos + h.size]
        if h.base_offset >= self.end_offset:
            return original
        if h.is_control:
            pid = h.producer_id
            had_data = self._txn_has_data.pop(pid, False)
            if past_horizon and not had_data and self.producer_last.get(pid) != h.last_offset:
                return None
            return original
        if self.is_aborted(h):
            self.aborted_dropped += max(h.records_count, 0)
            return self._empty_or_none(h)
        if h.records_count <= 0:
            return self._empty_or_none(h) if h.producer_id >= 0 else None
        rec = Records(buf, pos, h)
        n = len(rec.offsets)
        self.records_read += n
        keep = np.zeros(n, dtype=bool)
        idx, keys = _keyed(rec)
        if len(idx):
            hi, lo = digests_of(keys)
            latest = self.map.lookup(hi, lo)
            offs = rec.offsets[idx]
            k = offs >= latest                      # absent (-1) or the latest
            if past_horizon:
                tomb = rec.value_len[idx] < 0
                self.tombstones_dropped += int(np.count_nonzero(k & tomb & (offs < self.end_offset)))
                k &= ~tomb
            keep[idx] = k
        keep |= rec.offsets >= self.end_offset     # past the map: untouched
        kept = int(np.count_nonzero(keep))
        self.records_kept += kept
        if h.is_transactional and kept:
            self._txn_has_data[h.producer_id] = True
        if kept == n:
            return original
        if kept == 0:
            return self._empty_or_none(h)
        data = rec.data
        section = b"".join([data[a:b] for a, b in zip(rec.starts[keep].tolist(),
                                                      rec.ends[keep].tolist())])
        if h.attributes & TIMESTAMP_TYPE_BIT:
            max_ts = h.max_timestamp
        else:
            max_ts = h.base_timestamp + int(rec.ts_delta[keep].max())
        return _assemble(h, section, kept, max_ts, h.compression)

    def _empty_or_none(self, h: BatchHeader):
        if h.producer_id >= 0 and self.producer_last.get(h.producer_id) == h.last_offset:
            return _assemble(h, b"", 0, h.max_timestamp, NONE)
        return None


def _check(buf, pos: int, h: BatchHeader) -> None:
    # a rewritten batch gets a fresh CRC: never let one launder a corrupt batch
    if not crc_ok(buf, pos, h):
        raise CorruptRecordsError(f"batch at offset {h.base_offset} fails its CRC")


_EMPTY = (np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64),
          np.empty(0, dtype=np.int64))


def _assemble(h: BatchHeader, section: bytes, count: int, max_ts: int, compression: int):
    return assemble_batch(section, count, h.base_timestamp, max_ts, base_offset=h.base_offset,
                          compression=compression, log_append_time=h.log_append_time,
                          producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                          base_sequence=h.base_sequence, transactional=h.is_transactional,
                          control=False, partition_leader_epoch=h.partition_leader_epoch,
                          last_offset_delta=h.last_offset_delta)
