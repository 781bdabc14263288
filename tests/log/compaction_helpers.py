"""Helpers for the compaction tests: keyed batches, reading a log back as records."""
from __future__ import annotations

from gregor.log import Log, LogConfig
from gregor.log.cleaner import OffsetMap, clean_log
from gregor.protocol.records.batch import decode_batches, encode_batch, encode_control_batch

DAY = 86_400_000


def keyed_batch(pairs, ts: int = 1_000, **kw) -> bytes:
    """pairs: [(key bytes, value bytes | None), ...] -> one v2 batch."""
    return encode_batch([(ts + i, k, v, None) for i, (k, v) in enumerate(pairs)], **kw)


def marker(commit: bool, pid: int, epoch: int = 0, ts: int = 1_000) -> bytes:
    return encode_control_batch(commit, producer_id=pid, producer_epoch=epoch, timestamp_ms=ts)


def open_log(path, **cfg) -> Log:
    base = dict(segment_bytes=1 << 20, cleanup_policy="compact",
                flush_rolled_in_background=False)
    base.update(cfg)
    return Log.open(path, LogConfig(**base), clock=lambda: 10_000)


def batches(log: Log):
    """Every stored batch (control ones too), decoded."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 24)
        if not chunk:
            break
        bs = decode_batches(chunk)
        out += bs
        offset = bs[-1].last_offset + 1
    return out


def records(log: Log):
    """(offset, key, value) of every data record."""
    return [(r.offset, r.key, r.value) for b in batches(log) if not b.is_control for r in b]


def clean(log: Log, checkpoint=None, *, buffer=1 << 20, now=10_000, hook=None):
    return clean_log(log, checkpoint, OffsetMap(buffer), now_ms=now, hook=hook)
