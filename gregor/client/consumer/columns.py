"""Fetched records as columns: one `PartitionRecords` per partition per fetch.

The consumer decodes a partition's raw fetch bytes straight into parallel lists (offsets,
timestamps, keys, values, headers) instead of one object per record: bulk readers (the Spark
source) hand the columns to pyarrow as they are, and `poll()` builds `ConsumerRecord`s from
them only when asked. v2 batches are parsed here (after the CRC check and decompression);
legacy message sets (magic 0/1) go through gregor.protocol.records.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...protocol.errors import CorruptMessageError
from ...protocol.primitives import DecodeError
from .vector_decode import decode_columns
from ...protocol.records.header import (
    CONTROL_BIT, HEADER_SIZE, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, crc_ok, entry_size,
    parse_header, peek_magic,
)

# A compressed batch may expand to at most this many bytes: a hostile broker (or a corrupt
# log) must not make the consumer allocate without bound; 256 MiB is far above any batch a
# producer can build (max.request.size defaults to 1 MiB, brokers cap messages near 1 MiB).
MAX_DECOMPRESSED = 256 * 1024 * 1024

CREATE_TIME, LOG_APPEND_TIME = 0, 1
NO_TIMESTAMP_TYPE = -1


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int       # 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
    key: bytes | None
    value: bytes | None
    headers: list             # [(str, bytes | None)]
    leader_epoch: int = -1

    @property
    def timestamp_type_name(self) -> str:
        return {0: "CreateTime", 1: "LogAppendTime"}.get(self.timestamp_type, "NoTimestampType")


class CorruptRecordError(CorruptMessageError):
    """Fetched bytes that fail their CRC or do not parse; the message names the partition."""


class FetchedColumns:
    """What PartitionRecords and ArrowRecords (arrow_records.py) share: the columns of one
    partition's fetched records, in offset order, and the partition's fetch metadata."""

    __slots__ = ("topic", "partition", "offsets", "timestamps", "timestamp_types", "keys",
                 "values", "headers", "leader_epochs", "next_offset", "high_watermark",
                 "last_stable_offset", "log_start_offset")
    _COLUMNS = ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers",
                "leader_epochs")
    _META = ("next_offset", "high_watermark", "last_stable_offset", "log_start_offset")

    def _init_meta(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.next_offset = -1          # where the next fetch of this partition starts
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1

    def __len__(self) -> int:
        return len(self.offsets)

    def __repr__(self):
        return (f"<{type(self).__name__} {self.topic}-{self.partition} n={len(self)} "
                f"next={self.next_offset} hw={self.high_watermark}>")

    def _copy_meta(self, other) -> None:
        for name in self._META:
            setattr(other, name, getattr(self, name))


class PartitionRecords(FetchedColumns):
    """Columns of the records fetched for one partition, in offset order."""

    __slots__ = ()

    def __init__(self, topic: str, partition: int):
        self._init_meta(topic, partition)
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[list] = []
        self.leader_epochs: list[int] = []

    def records(self) -> list[ConsumerRecord]:
        t, p = self.topic, self.partition
        return [ConsumerRecord(t, p, o, ts, tt, k, v, h, e) for o, ts, tt, k, v, h, e in zip(
            self.offsets, self.timestamps, self.timestamp_types, self.keys, self.values,
            self.headers, self.leader_epochs)]

    def offset_at(self, i: int) -> int:
        return self.offsets[i]

    def slice(self, start: int, stop: int) -> "PartitionRecords":
        """Records [start:stop] as a new PartitionRecords (O(stop - start)); its next_offset
        is the offset of the record after stop (or this one's next_offset at the end)."""
        part = PartitionRecords(self.topic, self.partition)
        for name in self._COLUMNS:
            setattr(part, name, getattr(self, name)[start:stop])
        self._copy_meta(part)
        if stop < len(self.offsets):
            part.next_offset = self.offsets[stop]
        return part

    def split(self, n: int) -> "PartitionRecords":
        """Take the first n records out into a new PartitionRecords (for max.poll.records)."""
        head = PartitionRecords(self.topic, self.partition)
        for name in self._COLUMNS:
            col = getattr(self, name)
            setattr(head, name, col[:n])
            setattr(self, name, col[n:])
        self._copy_meta(head)
        if self.offsets:
            head.next_offset = self.offsets[0]
        return head

    def to_arrow(self):
        """A pyarrow.RecordBatch with Spark's Kafka source columns: key, value, topic
        (dictionary-encoded), partition, offset, timestamp (ms), timestampType, headers (list of
        key/value structs). Built from the columns without per-record Python objects."""
        import pyarrow as pa

        from .spark_columns import headers_array, spark_record_batch

        return spark_record_batch(
            self.topic, self.partition, pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()), pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64()), pa.array(self.timestamp_types, pa.int32()),
            headers_array(self.headers))


# -- v2 record parsing -----------------------------------------------------------------------------

def _varint(buf, pos):
    """Zig-zag varint at pos -> (value, new_pos). At most 10 bytes (64-bit)."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def _decode_v2_records(data: bytes, pos, end, count, base_offset, base_ts, ts_type,
                       log_append_ts, min_offset, out: PartitionRecords, epoch: int) -> None:
    """Append the `count` records of one batch body (data[pos:end], bytes) to out's columns,
    skipping those below min_offset. Varints of one and two bytes (every length below 8 KiB)
    are decoded inline: this loop is the consumer's hot path."""
    offsets, timestamps, keys, values, headers = (out.offsets, out.timestamps, out.keys,
                                                  out.values, out.headers)
    varint = _varint
    appended = 0
    log_append = ts_type == LOG_APPEND_TIME
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = varint(data, pos)
        start = pos
        pos += 1  # attributes (unused in v2 records)
        b = data[pos]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            ts_delta, pos = varint(data, pos)
        b = data[pos]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            off_delta, pos = varint(data, pos)
        b = data[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            klen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            klen, pos = varint(data, pos)
        if klen < 0:
            key = None
        else:
            key = data[pos:pos + klen]
            pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            vlen, pos = varint(data, pos)
        if vlen < 0:
            value = None
        else:
            value = data[pos:pos + vlen]
            pos += vlen
        if data[pos] == 0:
            hdrs = []
            pos += 1
        else:
            nh, pos = varint(data, pos)
            if nh < 0 or nh > end - pos:
                raise DecodeError(f"bad header count {nh}")
            hdrs = []
            for _ in range(nh):
                hklen, pos = varint(data, pos)
                if hklen < 0:
                    raise DecodeError("record header key is null")
                hkey = data[pos:pos + hklen].decode("utf-8", "replace")
                pos += hklen
                hvlen, pos = varint(data, pos)
                if hvlen < 0:
                    hval = None
                else:
                    hval = data[pos:pos + hvlen]
                    pos += hvlen
                hdrs.append((hkey, hval))
        # Cheap structural check: every record ends where its length said it would (this also
        # catches key/value lengths that ran past the end, since slicing does not fail).
        if pos - start != length or pos > end:
            raise DecodeError(f"record at offset {base_offset + off_delta} is malformed "
                              f"(length {length}, parsed {pos - start})")
        offset = base_offset + off_delta
        if offset < min_offset:
            continue
        offsets.append(offset)
        timestamps.append(log_append_ts if log_append else base_ts + ts_delta)
        keys.append(key)
        values.append(value)
        headers.append(hdrs)
        appended += 1
    if appended:
        out.timestamp_types.extend([ts_type] * appended)
        out.leader_epochs.extend([epoch] * appended)


class AbortedTransactions:
    """read_committed filtering: the fetch response lists (producer_id, first_offset) of
    aborted transactions; data batches of such a producer from first_offset on are dropped
    until that producer's abort marker (a control batch) is seen."""

    def __init__(self, aborted: list | None):
        self.pending = sorted(((a["first_offset"], a["producer_id"]) for a in aborted or []),
                              reverse=True)
        self.active: set[int] = set()

    def skip(self, h) -> bool:
        while self.pending and self.pending[-1][0] <= h.last_offset:
            self.active.add(self.pending.pop()[1])
        if h.is_control:
            # The control record of an abort ends the aborted span of that producer (commit
            # markers are not listed, so removing is harmless either way).
            self.active.discard(h.producer_id)
            return True
        return h.is_transactional and h.producer_id in self.active


def batch_numbers(batches: list, off_delta, ts_delta):
    """(offsets, timestamps, timestamp types, leader epochs) as numpy arrays for the records of
    `batches` ([(header, body, timestamp type)]) from their per-record deltas."""
    counts = [h.records_count for h, _, _ in batches]
    base_offsets = np.repeat(np.array([h.base_offset for h, _, _ in batches], np.int64), counts)
    offsets = off_delta + base_offsets
    append_time = [tt == LOG_APPEND_TIME for _, _, tt in batches]
    ts_base = np.repeat(np.array([h.base_timestamp for h, _, _ in batches], np.int64), counts)
    timestamps = ts_delta + ts_base
    if any(append_time):
        fixed = np.repeat(np.array([h.max_timestamp for h, _, _ in batches], np.int64), counts)
        timestamps = np.where(np.repeat(np.array(append_time), counts), fixed, timestamps)
    types = np.repeat(np.array([tt for _, _, tt in batches], np.int32), counts)
    epochs = np.repeat(np.array([h.partition_leader_epoch for h, _, _ in batches], np.int64),
                       counts)
    return offsets, timestamps, types, epochs


def _append_vectorised(batches: list, min_offset: int, out: PartitionRecords) -> bool:
    """Decode every data batch of a fetch in one numpy pass; False to use the loop instead.
    batches: [(header, body bytes, timestamp type)]."""
    cols = decode_columns([b for _, b, _ in batches], [h.records_count for h, _, _ in batches])
    if cols is None:
        return False
    off_delta, ts_delta, keys, values = cols
    offsets, timestamps, types, epochs = batch_numbers(batches, off_delta, ts_delta)
    if int(offsets.min()) < min_offset:
        keep = offsets >= min_offset
        offsets, timestamps, types, epochs = (offsets[keep], timestamps[keep], types[keep],
                                              epochs[keep])
        idx = np.flatnonzero(keep).tolist()
        keys = [keys[i] for i in idx]
        values = [values[i] for i in idx]
    n = len(keys)
    out.offsets.extend(offsets.tolist())
    out.timestamps.extend(timestamps.tolist())
    out.timestamp_types.extend(types.tolist())
    out.leader_epochs.extend(epochs.tolist())
    out.keys.extend(keys)
    out.values.extend(values)
    out.headers.extend([[] for _ in range(n)])
    return True


def decode_partition(data, topic: str, partition: int, fetch_offset: int, *,
                     check_crcs: bool = True, aborted: list | None = None,
                     read_committed: bool = False) -> PartitionRecords:
    """Decode a partition's fetched bytes into columns, skipping records below fetch_offset,
    control batches and (read_committed) aborted transactions. next_offset is set past the
    last complete batch, so a fetch continues after filtered batches too."""
    out = PartitionRecords(topic, partition)
    out.next_offset = fetch_offset
    if not data:
        return out
    batches = _data_batches(data, topic, partition, fetch_offset, check_crcs,
                            AbortedTransactions(aborted) if read_committed else None, out)
    if any(b[0] is None for b in batches):  # legacy message sets: keep them in order
        _append_in_order(batches, topic, partition, fetch_offset, out)
    elif batches and not _append_vectorised(batches, fetch_offset, out):
        _append_in_order(batches, topic, partition, fetch_offset, out)
    return out


def _data_batches(data, topic, partition, fetch_offset, check_crcs, filt,
                  out: PartitionRecords) -> list:
    """The batches whose records the caller wants, as (header, body bytes, timestamp type);
    legacy entries as (None, entry bytes, None). Moves out.next_offset past every complete
    batch, including skipped ones."""
    from ...protocol import compression  # imported late: only needed for compressed batches

    mv = memoryview(data)
    n = len(mv)
    pos = 0
    batches = []
    while True:
        size = entry_size(mv, pos)
        if size is None or pos + size > n:
            break  # a partial batch at the end of a fetch is normal: the next fetch gets it
        if peek_magic(mv, pos) < 2:
            batches.append((None, bytes(mv[pos:pos + size]), None))
            pos += size
            continue
        h = parse_header(mv, pos)
        if check_crcs and not crc_ok(mv, pos, h):
            raise CorruptRecordError(
                f"record batch at offset {h.base_offset} of {topic}-{partition} fails its CRC "
                "(corrupt on the broker or on the wire)")
        next_off = h.last_offset + 1
        out.next_offset = max(out.next_offset, next_off)
        if (filt is not None and filt.skip(h)) or h.attributes & CONTROL_BIT or \
                next_off <= fetch_offset:
            pos += size
            continue
        body_start, body_end = pos + HEADER_SIZE, pos + size
        if h.compression:
            body = compression.decompress(h.compression, mv[body_start:body_end],
                                          MAX_DECOMPRESSED)
            body = bytes(body) if not isinstance(body, bytes) else body
        else:
            # One copy of the batch body makes every key/value slice a plain bytes object.
            body = bytes(mv[body_start:body_end])
        ts_type = LOG_APPEND_TIME if h.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
        batches.append((h, body, ts_type))
        pos += size
    return batches


def _append_in_order(batches, topic, partition, fetch_offset, out: PartitionRecords) -> None:
    for h, body, ts_type in batches:
        if h is None:
            _decode_legacy(body, fetch_offset, out)
            continue
        try:
            _decode_v2_records(body, 0, len(body), h.records_count, h.base_offset,
                               h.base_timestamp, ts_type, h.max_timestamp, fetch_offset, out,
                               h.partition_leader_epoch)
        except (IndexError, DecodeError) as e:
            raise CorruptRecordError(f"record batch at offset {h.base_offset} of "
                                     f"{topic}-{partition} does not parse: {e}") from None


def _decode_legacy(entry, fetch_offset: int, out: PartitionRecords) -> None:
    """One magic 0/1 message (possibly a compressed wrapper) into out's columns."""
    from ...protocol.records import legacy  # the records layer owns the legacy format

    for m in legacy.decode_message_set(bytes(entry), max_decompressed=MAX_DECOMPRESSED):
        offset = m.offset
        if offset < fetch_offset:
            continue
        if m.magic == 0:
            ts, tt = -1, NO_TIMESTAMP_TYPE
        else:
            ts, tt = m.timestamp, m.timestamp_type
        out.offsets.append(offset)
        out.timestamps.append(ts)
        out.timestamp_types.append(tt)
        out.keys.append(m.key)
        out.values.append(m.value)
        out.headers.append([])
        out.leader_epochs.append(-1)
        out.next_offset = max(out.next_offset, offset + 1)


__all__ = ["ConsumerRecord", "PartitionRecords", "CorruptRecordError", "decode_partition",
           "CREATE_TIME", "LOG_APPEND_TIME", "NO_TIMESTAMP_TYPE", "TRANSACTIONAL_BIT"]
