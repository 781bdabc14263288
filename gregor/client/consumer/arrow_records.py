"""Fetched records as pyarrow arrays: the bulk readers' output (`poll_batches(arrow=True)`).

The common v2 fetch (many records without headers, uncompressed or compressed) is decoded
without one Python object per record: vector_decode finds every key's and value's position in
the joined batch bodies; those positions, interleaved as [key start, key end, value start,
value end, next key start, ...], never decrease, so they are the offsets of one BinaryArray
over the bodies whose elements 0, 4, 8, ... are the keys and 2, 6, 10, ... the values. Two
`take`s (C++) copy keys and values out into compact arrays; null keys/values (length -1) come
from null indices. When the optional compiled decoder is built (_arrow_decode.pyx), one pass
in C parses the records and copies keys and values into Arrow buffers instead (same arrays,
several times less CPU); the numpy path is its reference. Everything else (legacy message sets, batches with headers, small or
irregular fetches) is decoded by the record loop in columns.py and converted.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .columns import (AbortedTransactions, ConsumerRecord, FetchedColumns, PartitionRecords,
                      _append_in_order, _data_batches, batch_numbers)
from .spark_columns import (HEADER_STRUCT, HEADERS_TYPE,  # noqa: F401 (HEADERS_TYPE: API)
                            headers_array, no_headers as _no_headers, spark_record_batch)
from .vector_decode import MIN_RECORDS, record_fields
from ...compiled import load

_compiled = load("gregor.client.consumer._arrow_decode")

# Arrow's binary type has int32 offsets: a fetch whose joined batch bodies reach 2 GiB (only
# possible with a huge fetch.max.bytes) goes through the record loop instead.
MAX_ARROW_DATA = 2**31 - 1


class ArrowRecords(FetchedColumns):
    """The records fetched for one partition, in offset order, as pyarrow arrays: `offsets`,
    `timestamps` (ms) int64; `timestamp_types`, `leader_epochs` int32; `keys`, `values`
    binary (null for a null key/value); `headers` list<struct<key: string, value: binary>>.
    Same metadata as PartitionRecords (next_offset, high_watermark, ...)."""

    __slots__ = ()

    def __init__(self, topic: str, partition: int, offsets, timestamps, timestamp_types, keys,
                 values, headers, leader_epochs):
        self._init_meta(topic, partition)
        self.offsets: pa.Int64Array = offsets
        self.timestamps: pa.Int64Array = timestamps
        self.timestamp_types: pa.Int32Array = timestamp_types
        self.keys: pa.BinaryArray = keys
        self.values: pa.BinaryArray = values
        self.headers: pa.ListArray = headers
        self.leader_epochs: pa.Int32Array = leader_epochs

    def offset_at(self, i: int) -> int:
        return self.offsets[i].as_py()

    def slice(self, start: int, stop: int) -> "ArrowRecords":
        """Records [start:stop] (zero-copy); next_offset is the offset of the record after
        stop, or this one's next_offset at the end."""
        part = ArrowRecords(self.topic, self.partition,
                            *(getattr(self, c).slice(start, stop - start) for c in self._COLUMNS))
        self._copy_meta(part)
        if stop < len(self):
            part.next_offset = self.offset_at(stop)
        return part

    @classmethod
    def from_columns(cls, pr: PartitionRecords) -> "ArrowRecords":
        """The same records from list columns (the record loop's output)."""
        out = cls(pr.topic, pr.partition, pa.array(pr.offsets, pa.int64()),
                  pa.array(pr.timestamps, pa.int64()), pa.array(pr.timestamp_types, pa.int32()),
                  pa.array(pr.keys, pa.binary()), pa.array(pr.values, pa.binary()),
                  headers_array(pr.headers), pa.array(pr.leader_epochs, pa.int32()))
        pr._copy_meta(out)
        return out

    def to_columns(self) -> PartitionRecords:
        """The same records as list columns (PartitionRecords)."""
        pr = PartitionRecords(self.topic, self.partition)
        for name in ("offsets", "timestamps", "timestamp_types", "keys", "values",
                     "leader_epochs"):
            setattr(pr, name, getattr(self, name).to_pylist())
        pr.headers = [[(h["key"], h["value"]) for h in row]
                      for row in self.headers.to_pylist()]
        self._copy_meta(pr)
        return pr

    def records(self) -> list[ConsumerRecord]:
        return self.to_columns().records()

    def to_arrow(self) -> pa.RecordBatch:
        """A pyarrow.RecordBatch with Spark's Kafka source columns, as PartitionRecords.to_arrow."""
        return spark_record_batch(self.topic, self.partition, self.keys, self.values,
                                  self.offsets, self.timestamps, self.timestamp_types,
                                  self.headers)


def _take(pieces: pa.BinaryArray, idx: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    """pieces[idx] with nulls where lengths < 0 (a null index takes a null)."""
    null = lengths < 0
    return pieces.take(pa.array(idx, pa.int64(), mask=null if null.any() else None))


def _binary(parts, n: int) -> pa.BinaryArray:
    """A BinaryArray from the compiled decoder's (validity bytes or None, offsets, data)."""
    valid, offsets, data = parts
    if valid is None:
        return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                            pa.py_buffer(data)], 0)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.BinaryArray.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets),
                                                        pa.py_buffer(data)], n - int(valid.sum()))


def _compiled_records(batches: list, topic: str, partition: int, min_offset: int):
    """_vectorised's result from the compiled decoder, or None when it declines the fetch."""
    got = _compiled.decode_bodies([b for _, b, _ in batches], [h.records_count for h, _, _ in batches])
    if got is None:
        return None
    off_delta, ts_delta, key_parts, value_parts = got
    offsets, timestamps, types, epochs = batch_numbers(batches, off_delta, ts_delta)
    n = len(offsets)
    keys, values = _binary(key_parts, n), _binary(value_parts, n)
    if n and int(offsets.min()) < min_offset:
        keep = offsets >= min_offset
        mask = pa.array(keep)
        offsets, timestamps, types, epochs = (offsets[keep], timestamps[keep], types[keep],
                                              epochs[keep])
        keys, values = keys.filter(mask), values.filter(mask)
    return ArrowRecords(topic, partition, pa.array(offsets), pa.array(timestamps),
                        pa.array(types), keys, values, _no_headers(len(offsets)),
                        pa.array(epochs.astype(np.int32)))


def _vectorised(batches: list, topic: str, partition: int, min_offset: int):
    """ArrowRecords for every data batch of a fetch in one numpy pass, or None when the
    fetch is not one record_fields handles."""
    if _compiled is not None and sum(h.records_count for h, _, _ in batches) >= MIN_RECORDS:
        got = _compiled_records(batches, topic, partition, min_offset)
        if got is not None:
            return got
    got = record_fields([b for _, b, _ in batches], [h.records_count for h, _, _ in batches])
    if got is None:
        return None
    data, off_delta, ts_delta, kstart, klen, vstart, vlen = got
    if len(data) > MAX_ARROW_DATA:
        return None
    offsets, timestamps, types, epochs = batch_numbers(batches, off_delta, ts_delta)
    n = len(offsets)
    bounds = np.empty(4 * n, np.int32)
    bounds[0::4] = kstart
    bounds[1::4] = kstart + np.maximum(klen, 0)
    bounds[2::4] = vstart
    bounds[3::4] = vstart + np.maximum(vlen, 0)
    pieces = pa.BinaryArray.from_buffers(pa.binary(), 4 * n - 1,
                                         [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    if int(offsets.min()) < min_offset:
        keep = np.flatnonzero(offsets >= min_offset)
        offsets, timestamps, types, epochs = (offsets[keep], timestamps[keep], types[keep],
                                              epochs[keep])
        klen, vlen = klen[keep], vlen[keep]
        first = keep * 4
    else:
        first = np.arange(0, 4 * n, 4, dtype=np.int64)
    m = len(offsets)
    return ArrowRecords(topic, partition, pa.array(offsets), pa.array(timestamps),
                        pa.array(types), _take(pieces, first, klen),
                        _take(pieces, first + 2, vlen), _no_headers(m),
                        pa.array(epochs.astype(np.int32)))


def decode_partition_arrow(data, topic: str, partition: int, fetch_offset: int, *,
                           check_crcs: bool = True, aborted: list | None = None,
                           read_committed: bool = False) -> ArrowRecords:
    """decode_partition's twin returning ArrowRecords: the same records, filtering, errors and
    next_offset."""
    out = PartitionRecords(topic, partition)
    out.next_offset = fetch_offset
    if data:
        batches = _data_batches(data, topic, partition, fetch_offset, check_crcs,
                                AbortedTransactions(aborted) if read_committed else None, out)
        if batches and all(b[0] is not None for b in batches):
            got = _vectorised(batches, topic, partition, fetch_offset)
            if got is not None:
                got.next_offset = out.next_offset
                return got
        _append_in_order(batches, topic, partition, fetch_offset, out)
    return ArrowRecords.from_columns(out)


__all__ = ["ArrowRecords", "decode_partition_arrow", "HEADERS_TYPE"]
