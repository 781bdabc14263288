"""Record batches v2 (magic 2): records, batches, encoding, decoding and validation.

- `encode_batch(records, ...)` builds one batch from (timestamp, key, value, headers) tuples.
- `decode_batches(buf)` turns the batches in buf into RecordBatch objects (consumers, tools).
- `validate_batch(buf, pos)` is what the broker runs on the produce path: CRC, header and the
  structure of every record, without building Record objects (compressed batches are
  decompressed, within a size cap, to be walked).
- Control records (transaction markers): `encode_control_batch`, `RecordBatch.control_type`.

Errors: CorruptRecordsError (CORRUPT_MESSAGE) for bytes that are not a well-formed batch,
InvalidRecordsError (INVALID_RECORD) for well-formed batches that break the rules. Both are
also DecodeErrors.
"""
from __future__ import annotations

import struct
import time
from typing import Iterable, Iterator

from ..compression import DEFAULT_MAX_DECOMPRESSED, NONE
from .encoding import assemble_batch, encode_records
from .errors import CorruptRecordsError, InvalidRecordsError
from .fields import VECTOR_MIN_RECORDS, locate_fields
from .parsing import (complete_batch_at, decode_headers, header_at, records_section,
                      varint_slow)
from .validation import validate_batch, walk_records  # noqa: F401  (part of this module's API)
from .header import HEADER_SIZE, TIMESTAMP_TYPE_BIT, BatchHeader

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

# Control record types (the key of a control record is int16 version 0, int16 type).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")   # version 0, coordinator epoch


class Record:
    """One record as a consumer sees it."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers", "timestamp_type")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: list | None = None, timestamp_type: int = CREATE_TIME):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers if headers is not None else []
        self.timestamp_type = timestamp_type

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return (self.offset, self.timestamp, self.key, self.value, list(self.headers),
                self.timestamp_type) == (other.offset, other.timestamp, other.key, other.value,
                                         list(other.headers), other.timestamp_type)

    def __repr__(self) -> str:
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


class RecordBatch:
    """A decoded v2 batch: its header plus its records."""

    __slots__ = ("header", "records")

    def __init__(self, header: BatchHeader, records: list[Record]):
        self.header = header
        self.records = records

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        h = self.header
        return (f"RecordBatch(base_offset={h.base_offset}, records={len(self.records)}, "
                f"compression={h.compression}, producer_id={h.producer_id})")

    base_offset = property(lambda self: self.header.base_offset)
    last_offset = property(lambda self: self.header.last_offset)
    base_timestamp = property(lambda self: self.header.base_timestamp)
    max_timestamp = property(lambda self: self.header.max_timestamp)
    producer_id = property(lambda self: self.header.producer_id)
    producer_epoch = property(lambda self: self.header.producer_epoch)
    base_sequence = property(lambda self: self.header.base_sequence)
    partition_leader_epoch = property(lambda self: self.header.partition_leader_epoch)
    compression = property(lambda self: self.header.compression)
    is_transactional = property(lambda self: self.header.is_transactional)
    is_control = property(lambda self: self.header.is_control)
    size = property(lambda self: self.header.size)

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.header.log_append_time else CREATE_TIME

    @property
    def control_type(self) -> int | None:
        """CONTROL_COMMIT / CONTROL_ABORT for a transaction marker batch, else None."""
        if not self.header.is_control or not self.records:
            return None
        return parse_control_key(self.records[0].key)[1]


# ---------------------------------------------------------------------------------------------
# encoding


def encode_batch(records: Iterable, *, base_offset: int = 0, compression: int = NONE,
                 log_append_time: bool = False, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False, control: bool = False,
                 partition_leader_epoch: int = -1, compression_level: int | None = None) -> bytes:
    """One v2 batch from (timestamp_ms, key, value, headers) tuples (headers may be None or
    a list of (str, bytes|None)). The first record's timestamp is the base timestamp."""
    records = list(records)
    if not records:
        raise ValueError("a record batch needs at least one record")
    timestamps = [r[0] for r in records]
    keys = [r[1] for r in records]
    values = [r[2] for r in records]
    headers = [r[3] if len(r) > 3 else None for r in records]
    if not any(headers):
        headers = None
    base_ts = timestamps[0]
    body = encode_records(timestamps, keys, values, headers, base_ts)
    return assemble_batch(body, len(records), base_ts, max(timestamps), base_offset=base_offset,
                          compression=compression, log_append_time=log_append_time,
                          producer_id=producer_id, producer_epoch=producer_epoch,
                          base_sequence=base_sequence, transactional=transactional,
                          control=control, partition_leader_epoch=partition_leader_epoch,
                          compression_level=compression_level)


def encode_control_batch(commit: bool, *, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int = 0, timestamp_ms: int | None = None,
                         base_offset: int = 0, partition_leader_epoch: int = -1) -> bytes:
    """An end-transaction marker: a transactional control batch with one control record."""
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    return encode_batch([(ts, key, value, None)], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        transactional=True, control=True,
                        partition_leader_epoch=partition_leader_epoch)


def parse_control_key(key: bytes | None) -> tuple[int, int]:
    """(version, type) of a control record key."""
    if key is None or len(key) < 4:
        raise InvalidRecordsError("control record key must hold int16 version + int16 type")
    return _CONTROL_KEY.unpack_from(key)


def parse_control_value(value: bytes | None) -> tuple[int, int]:
    """(version, coordinator_epoch) of an end-transaction marker's value."""
    if value is None or len(value) < 6:
        raise InvalidRecordsError("end transaction marker value must hold int16 version + "
                                  "int32 coordinator epoch")
    return _CONTROL_VALUE.unpack_from(value)


# ---------------------------------------------------------------------------------------------
# decoding


def decode_records(data: bytes, h: BatchHeader) -> list[Record]:
    """Records of a batch from its (decompressed) records section."""
    count = h.records_count
    if count >= VECTOR_MIN_RECORDS and count <= len(data) // 7:
        return _decode_records_vector(data, h)
    return _decode_records_loop(data, h)


def _decode_records_vector(data: bytes, h: BatchHeader) -> list[Record]:
    """decode_records for many records: fields located with numpy (fields.py), then one
    comprehension builds the records."""
    f = locate_fields(data, h.records_count)
    offsets = (f.offset_delta + h.base_offset).tolist()
    if h.attributes & TIMESTAMP_TYPE_BIT:
        ts_type = LOG_APPEND_TIME
        timestamps = [h.max_timestamp] * h.records_count
    else:
        ts_type = CREATE_TIME
        timestamps = (f.timestamp_delta + h.base_timestamp).tolist()
    kpos = f.key_pos.tolist()
    kend = (f.key_pos + f.key_len).tolist()
    vpos = f.value_pos.tolist()
    vend = (f.value_pos + f.value_len).tolist()
    out = [Record(o, t, data[a:b] if b >= a else None, data[c:d] if d >= c else None, [],
                  ts_type)
           for o, t, a, b, c, d in zip(offsets, timestamps, kpos, kend, vpos, vend)]
    for i in f.with_headers.tolist():
        out[i].headers, p = decode_headers(data, int(f.headers_pos[i]), int(f.ends[i]))
        if p != int(f.ends[i]):
            raise CorruptRecordsError(f"record {i}'s declared length disagrees with its "
                                      f"headers")
    return out


def _decode_records_loop(data: bytes, h: BatchHeader) -> list[Record]:
    """decode_records for small batches. Each field's varint is read inline, not through a
    helper: this loop runs once per record, and a call per field would add to every record's
    cost (validation.py and fields.py repeat the same pattern for the same reason)."""
    out = []
    append = out.append
    base_offset = h.base_offset
    base_ts = h.base_timestamp
    ts_type = LOG_APPEND_TIME if h.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
    end = len(data)
    p = 0
    count = h.records_count
    if count < 0 or count > end:   # every record takes at least 7 bytes
        raise CorruptRecordsError(f"batch at offset {base_offset} claims {count} records in "
                                  f"{end} bytes")
    try:
        for _ in range(count):
            b = data[p]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                length, p = varint_slow(data, p, end)
            rec_end = p + length
            if length < 6 or rec_end > end:
                raise CorruptRecordsError(f"record length {length} does not fit the batch")
            p += 1   # attributes (unused)
            b = data[p]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                ts_delta, p = varint_slow(data, p, rec_end)
            b = data[p]
            if b < 0x80:
                off_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                off_delta = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                off_delta, p = varint_slow(data, p, rec_end)
            b = data[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                n, p = varint_slow(data, p, rec_end)
            if n < 0:
                if n != -1:
                    raise CorruptRecordsError(f"negative key length {n}")
                key = None
            else:
                if p + n > rec_end:
                    raise CorruptRecordsError("key runs past the end of its record")
                key = data[p:p + n]
                p += n
            b = data[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                b = (b & 0x7F) | (data[p + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                n, p = varint_slow(data, p, rec_end)
            if n < 0:
                if n != -1:
                    raise CorruptRecordsError(f"negative value length {n}")
                value = None
            else:
                if p + n > rec_end:
                    raise CorruptRecordsError("value runs past the end of its record")
                value = data[p:p + n]
                p += n
            b = data[p]
            if b == 0:
                headers = []
                p += 1
            else:
                headers, p = decode_headers(data, p, rec_end)
            if p != rec_end:
                raise CorruptRecordsError(f"record declares {length} bytes but its fields "
                                          f"take {length + p - rec_end}")
            append(Record(base_offset + off_delta,
                          h.max_timestamp if ts_type else base_ts + ts_delta,
                          key, value, headers, ts_type))
    except IndexError:
        raise CorruptRecordsError(f"batch at offset {base_offset} ends inside a record") from None
    if p != end:
        raise CorruptRecordsError(f"batch at offset {base_offset} has {end - p} bytes after "
                                  f"its {count} records")
    return out


def decode_batch(buf, pos: int = 0, *, verify_crc: bool = True,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> RecordBatch:
    """Decode the complete v2 batch at pos."""
    h = complete_batch_at(buf, pos, verify_crc=verify_crc)
    data = records_section(buf, pos, h, max_decompressed)
    return RecordBatch(h, decode_records(data, h))


def decode_batches(buf, *, verify_crc: bool = True,
                   max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                   allow_partial: bool = True) -> list[RecordBatch]:
    """Every v2 batch in buf. A fetch response may end with a partial batch (cut by
    max_bytes); with allow_partial (the default) it is skipped, otherwise it is an error."""
    out = []
    pos, n = 0, len(buf)
    while pos < n:
        if n - pos < HEADER_SIZE:
            if allow_partial:
                break
            raise CorruptRecordsError(f"{n - pos} trailing bytes are not a batch")
        h = header_at(buf, pos)
        if pos + h.size > n:
            if allow_partial:
                break
            raise CorruptRecordsError(f"batch at offset {h.base_offset} needs {h.size} bytes, "
                                      f"{n - pos} present")
        out.append(decode_batch(buf, pos, verify_crc=verify_crc,
                                max_decompressed=max_decompressed))
        pos += h.size
    return out
