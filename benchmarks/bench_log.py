"""Log append and read throughput against raw os.write / os.pread, measured side by side.

Appends 1 MiB record batches to a gregor Log and the same bytes with plain os.write to a plain
file, in short alternating trials (this machine is shared and noisy), then reads everything back
with Log.read(offset, 1 MiB) and with os.pread of 1 MiB chunks; prints medians and ratios. Both
sides hit the page cache only (default flush policy: no fsync), which isolates the log's own
cost. A last line shows the fixed per-append cost with 16 KiB batches.

    .venv/bin/python benchmarks/bench_log.py [--mib 64] [--trials 12] [--segment-mib 1024]
                                             [--dir /dev/shm]

With a small --segment-mib the rolls' background fsyncs compete with the appends for the disk
(Kafka pays the same). Target (issue 2): >= 50% of raw throughput for both directions.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from gregor.log import Log, LogConfig  # noqa: E402
from gregor.protocol.records.header import entry_size, parse_header  # noqa: E402

MIB = 1 << 20


def one_mib_batch() -> bytes:
    """A v2 batch of 1 KiB records, just under 1 MiB (the default max.message.bytes)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 30)
    value = os.urandom(1000)
    i = 0
    while b.size() + 1100 < MIB:
        b.append(i, timestamp=1_700_000_000_000 + i, key=None, value=value, headers=[])
        i += 1
    return bytes(b.build())


def raw_write(path: str, batch: bytes, count: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t = time.perf_counter()
    for _ in range(count):
        os.write(fd, batch)
    elapsed = time.perf_counter() - t
    os.close(fd)
    return elapsed


def raw_read(path: str, chunk: int) -> tuple[float, int]:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    total, pos = 0, 0
    t = time.perf_counter()
    while pos < size:
        data = os.pread(fd, chunk, pos)
        pos += len(data)
        total += len(data)
    elapsed = time.perf_counter() - t
    os.close(fd)
    return elapsed, total


def log_append(directory: str, batch: bytes, count: int, config: LogConfig) -> tuple[float, Log]:
    log = Log.open(directory, config)
    t = time.perf_counter()
    for _ in range(count):
        log.append(batch)
    elapsed = time.perf_counter() - t
    return elapsed, log


def log_read(log: Log, max_bytes: int) -> tuple[float, int]:
    offset, total, end = log.log_start_offset, 0, log.log_end_offset
    t = time.perf_counter()
    while offset < end:
        data = log.read(offset, max_bytes)
        total += len(data)
        offset = _next_offset(data)
    elapsed = time.perf_counter() - t
    return elapsed, total


def _next_offset(data: bytes) -> int:
    """The offset after the last batch in data (a consumer's next fetch position)."""
    pos, last = 0, 0
    while pos < len(data):
        last = pos
        pos += entry_size(data, pos)
    h = parse_header(data, last)
    return h.base_offset + h.last_offset_delta + 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64, help="data per trial")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--segment-mib", type=int, default=1024, help="segment.bytes in MiB")
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = ap.parse_args()

    batch = one_mib_batch()
    count = max(1, args.mib * MIB // len(batch))
    volume = len(batch) * count
    config = LogConfig(segment_bytes=min(args.segment_mib * MIB, (1 << 31) - 1))
    root = tempfile.mkdtemp(prefix="bench-log-", dir=args.dir)
    print(f"batch {len(batch)} bytes x {count} per trial, {args.trials} trials, "
          f"segment.bytes {config.segment_bytes // MIB} MiB, dir {root}")
    # Short alternating trials, each file deleted right after (which drops its dirty pages):
    # long runs measure the disk's writeback throttling, not the code.
    w_raw, w_log, r_raw, r_log = [], [], [], []
    try:
        for trial in range(args.trials):
            raw_path = os.path.join(root, "raw.bin")
            log_dir = os.path.join(root, f"log-{trial}")
            if trial % 2 == 0:
                t_raw = raw_write(raw_path, batch, count)
                t_log, log = log_append(log_dir, batch, count, config)
            else:
                t_log, log = log_append(log_dir, batch, count, config)
                t_raw = raw_write(raw_path, batch, count)
            w_raw.append(volume / t_raw)
            w_log.append(volume / t_log)
            if trial % 2 == 0:
                t, n = raw_read(raw_path, MIB)
                r_raw.append(n / t)
                t, n = log_read(log, MIB)
                r_log.append(n / t)
            else:
                t, n = log_read(log, MIB)
                r_log.append(n / t)
                t, n = raw_read(raw_path, MIB)
                r_raw.append(n / t)
            assert n == volume, (n, volume)
            log.delete()
            os.unlink(raw_path)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    print(f"append 1 MiB batches: raw os.write {med(w_raw) / MIB:6.0f} MiB/s, Log.append "
          f"{med(w_log) / MIB:6.0f} MiB/s (medians), ratio {med(w_log) / med(w_raw):.2f} "
          f"(target >= 0.50)")
    print(f"read back 1 MiB:      raw os.pread {med(r_raw) / MIB:6.0f} MiB/s, Log.read   "
          f"{med(r_log) / MIB:6.0f} MiB/s (medians), ratio {med(r_log) / med(r_raw):.2f} "
          f"(target >= 0.50)")
    per_trial = sorted(lw / rw for lw, rw in zip(w_log, w_raw))
    print(f"per-trial append ratios: min {per_trial[0]:.2f}, median {med(per_trial):.2f}, "
          f"max {per_trial[-1]:.2f}")
    small_batches(args.dir, config)


def small_batches(where: str | None, config: LogConfig, count: int = 3000, trials: int = 6):
    """The log's fixed cost per append, seen with 16 KiB batches (a producer's batch.size)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 30)
    for i in range(100):
        b.append(i, timestamp=1_700_000_000_000, key=None, value=os.urandom(150), headers=[])
    batch = bytes(b.build())
    root = tempfile.mkdtemp(prefix="bench-log-small-", dir=where)
    raw_us, log_us = [], []
    try:
        for trial in range(trials):
            raw_us.append(raw_write(os.path.join(root, "raw.bin"), batch, count) / count * 1e6)
            os.unlink(os.path.join(root, "raw.bin"))
            t, log = log_append(os.path.join(root, f"log-{trial}"), batch, count, config)
            log_us.append(t / count * 1e6)
            log.delete()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    raw, lg = statistics.median(raw_us), statistics.median(log_us)
    print(f"append {len(batch)} B batches: raw os.write {raw:.1f} us, Log.append {lg:.1f} us "
          f"per batch (medians): {lg - raw:.1f} us of log overhead, ratio {raw / lg:.2f}")


if __name__ == "__main__":
    main()
