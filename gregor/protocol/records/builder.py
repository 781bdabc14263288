"""Building record batches: BatchBuilder (one record at a time) and build_batch_bulk.

BatchBuilder.append only remembers the record and keeps a running size estimate, so a full
batch can be refused cheaply; build() then encodes all records in one pass (encoding.py: a
list comprehension over pre-encoded varints, or numpy for many records of one shape). That
keeps the Python work per appended record to a few list appends.

The size estimate counts key, value and header bytes plus a fixed per-record overhead. The
overhead (12 bytes) covers the varints of records up to 8 KiB with timestamp deltas under
8 s; larger records may run a few bytes past max_bytes, which like Kafka's batch.size is a
target, not a hard limit (the broker's limit is max.message.bytes, far above it).
"""
from __future__ import annotations

import time

import numpy as np

from ..compression import NONE, codec_id
from .encoding import (UNIFORM_MIN_RECORDS, assemble_arrow_batch, assemble_batch,
                       assemble_lists_batch, assemble_uniform_batch, encode_records, is_arrow)
from .header import HEADER_SIZE

_RECORD_OVERHEAD = 12
# magic 0: offset 8 + size 4 + crc 4 + magic 1 + attributes 1 + key len 4 + value len 4;
# magic 1 adds an 8-byte timestamp.
_LEGACY_OVERHEAD = (26, 34)


def _now_ms() -> int:
    return int(time.time() * 1000)


class BatchBuilder:
    """Collects records for one partition and builds one batch (magic 2, or 0/1 for old
    brokers) from them."""

    __slots__ = ("compression", "max_bytes", "magic", "compression_level", "_timestamps",
                 "_keys", "_values", "_headers", "_size", "_overhead")

    def __init__(self, compression=NONE, max_bytes: int = 16384, magic: int = 2,
                 compression_level: int | None = None):
        if magic not in (0, 1, 2):
            raise ValueError(f"record format magic must be 0, 1 or 2, not {magic}")
        self.compression = codec_id(compression)
        self.max_bytes = max_bytes
        self.magic = magic
        self.compression_level = compression_level
        self._timestamps: list = []
        self._keys: list = []
        self._values: list = []
        self._headers: list | None = None      # created when the first record has headers
        self._size = HEADER_SIZE if magic == 2 else 0
        self._overhead = _RECORD_OVERHEAD if magic == 2 else _LEGACY_OVERHEAD[magic]

    def append(self, timestamp_ms, key, value, headers=None) -> bool:
        """Add a record; False (record not added) when the batch is full. The first record is
        always added, whatever its size. timestamp_ms None means now."""
        size = self._size + self._overhead
        if key is not None:
            size += len(key)
        if value is not None:
            size += len(value)
        if headers:
            size += self._headers_size(headers)
        if size > self.max_bytes and self._keys:
            return False
        self._size = size
        self._keys.append(key)
        self._values.append(value)
        self._timestamps.append(timestamp_ms)
        if headers or self._headers is not None:
            self._add_headers(headers)
        return True

    def _headers_size(self, headers) -> int:
        if self.magic < 2:
            raise ValueError("record headers need record format magic 2 (Kafka 0.11+ brokers)")
        return sum(len(k) + (len(v) if v is not None else 0) + 6 for k, v in headers)

    def _add_headers(self, headers) -> None:
        if self._headers is None:
            self._headers = [None] * (len(self._keys) - 1)
        self._headers.append(headers)

    @property
    def record_count(self) -> int:
        return len(self._keys)

    @property
    def size_estimate(self) -> int:
        """Estimated size of the built batch in bytes, before compression."""
        return self._size

    def is_full(self) -> bool:
        return self._size >= self.max_bytes

    def build(self, base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1,
              base_sequence: int = -1, transactional: bool = False,
              partition_leader_epoch: int = -1) -> bytes:
        """Encode the batch. Raises ValueError when no record was appended."""
        n = len(self._keys)
        if n == 0:
            raise ValueError("cannot build a batch without records")
        timestamps = self._timestamps
        if None in timestamps:
            now = _now_ms()
            timestamps = [now if t is None else t for t in timestamps]
        if self.magic < 2:
            from .legacy import LegacyMessage, encode_message_set
            msgs = [LegacyMessage(base_offset + i, t, k, v, magic=self.magic)
                    for i, (t, k, v) in enumerate(zip(timestamps, self._keys, self._values))]
            return encode_message_set(msgs, self.magic, self.compression)
        base_ts = timestamps[0]
        body = encode_records(timestamps, self._keys, self._values, self._headers, base_ts)
        return assemble_batch(body, n, base_ts, max(timestamps), base_offset=base_offset,
                              compression=self.compression, producer_id=producer_id,
                              producer_epoch=producer_epoch, base_sequence=base_sequence,
                              transactional=transactional,
                              partition_leader_epoch=partition_leader_epoch,
                              compression_level=self.compression_level)


def build_batch_bulk(keys, values, timestamps=None, compression=NONE, *, headers=None,
                     base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                     base_sequence: int = -1, transactional: bool = False,
                     partition_leader_epoch: int = -1,
                     compression_level: int | None = None, mutable: bool = False) -> bytes:
    """One v2 batch from parallel sequences, encoded in a single vectorised pass
    (mutable=True: as a bytearray, see assemble_batch).

    keys: a sequence of bytes/None, or None for no keys at all; values: a sequence of
    bytes/None; timestamps: None (now), one int for every record, or a sequence (None items
    mean now) / int64 array;
    headers: None or one header list (or None) per record.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    if keys is not None and len(keys) != n:
        raise ValueError(f"{len(keys)} keys for {n} values")
    if timestamps is None:
        timestamps = _now_ms()
    if isinstance(timestamps, (int, np.integer)):
        timestamps = int(timestamps)
        base_ts = max_ts = timestamps
    else:
        if len(timestamps) != n:
            raise ValueError(f"{len(timestamps)} timestamps for {n} values")
        if isinstance(timestamps, np.ndarray):
            base_ts, max_ts = int(timestamps[0]), int(timestamps.max())
        else:
            if None in timestamps:
                now = _now_ms()
                timestamps = [now if t is None else t for t in timestamps]
            base_ts, max_ts = timestamps[0], max(timestamps)
    if headers is not None and not any(headers):
        headers = None
    if headers is not None and len(headers) != n:
        raise ValueError(f"{len(headers)} header lists for {n} values")
    if headers is not None and isinstance(timestamps, np.ndarray):
        timestamps = timestamps.tolist()
    if headers is None and is_arrow(values) and codec_id(compression) == NONE:
        batch = assemble_arrow_batch(timestamps, keys, values, base_ts, max_ts,
                                     base_offset=base_offset, producer_id=producer_id,
                                     producer_epoch=producer_epoch, base_sequence=base_sequence,
                                     transactional=transactional,
                                     partition_leader_epoch=partition_leader_epoch)
        return batch if mutable else bytes(batch)
    if headers is None and codec_id(compression) == NONE:
        batch = assemble_lists_batch(timestamps, keys, values, base_ts, max_ts,
                                     base_offset=base_offset, producer_id=producer_id,
                                     producer_epoch=producer_epoch, base_sequence=base_sequence,
                                     transactional=transactional,
                                     partition_leader_epoch=partition_leader_epoch)
        if batch is not None:
            return batch if mutable else bytes(batch)
    if headers is None and n >= UNIFORM_MIN_RECORDS and codec_id(compression) == NONE:
        batch = assemble_uniform_batch(timestamps, keys, values, base_ts, max_ts,
                                       base_offset=base_offset, producer_id=producer_id,
                                       producer_epoch=producer_epoch,
                                       base_sequence=base_sequence,
                                       transactional=transactional,
                                       partition_leader_epoch=partition_leader_epoch)
        if batch is not None:
            return batch if mutable else bytes(batch)
    body = encode_records(timestamps, keys, values, headers, base_ts)
    return assemble_batch(body, n, base_ts, max_ts, base_offset=base_offset,
                          compression=codec_id(compression), producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=base_sequence,
                          transactional=transactional,
                          partition_leader_epoch=partition_leader_epoch,
                          compression_level=compression_level, mutable=mutable)
