"""Record batches for the log tests, built with kafka-python's independent v2 builder."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

from gregor.protocol.records.header import iter_headers


def make_batch(records: int = 1, value_size: int = 10, *, producer_id: int = -1,
               producer_epoch: int = -1, base_sequence: int = -1, timestamp: int = 1_000,
               transactional: bool = False, tag: int = 0) -> bytes:
    """A v2 batch of `records` records with base offset 0; `tag` makes values distinct."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=1 << 30)
    value = (tag.to_bytes(8, "big") * (value_size // 8 + 1))[:value_size]
    for i in range(records):
        b.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    return bytes(b.build())


def split_batches(data: bytes) -> list[bytes]:
    return [data[pos:pos + h.size] for pos, h in iter_headers(data)]


def read_all(log, start: int | None = None) -> bytes:
    """Every batch from start (default: log start) to the end, via Log.read."""
    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        assert chunk, f"empty read at {offset} below the log end {log.log_end_offset}"
        out.append(chunk)
        last = list(iter_headers(chunk))[-1][1]
        offset = last.base_offset + last.last_offset_delta + 1
    return b"".join(out)
