"""Log compaction: cleaning throughput beside the disk's raw rate, and produce latency while
the cleaner runs beside without it. Prints ratios; no timed assertions.

1. Cleaning: a compacted Log of --mib MiB of 1 KiB-value records over --keys keys (so most of
   it is superseded) is cleaned in one pass (clean_log). Beside it, in the same run: reading
   the same bytes with os.pread and writing them with os.write + fsync (what a pass must do at
   least). Target: >= 50 MB/s of dirty log.
2. Produce p99: a broker process; a producer sends one small record at a time (acks=1) and
   times each round trip, in --rounds rounds of: idle, then while the cleaner cleans a fresh
   --mib MiB topic (switched to cleanup.policy=compact). Target: <= 1.5x.

    .venv/bin/python benchmarks/bench_compaction.py [--mib 64] [--keys 5000] [--skip-broker]
                                                    [--io-max 100e6]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gregor.log import Log, LogConfig  # noqa: E402
from gregor.log.cleaner import OffsetMap, clean_log  # noqa: E402
from gregor.protocol.records.batch import encode_batch  # noqa: E402

MB = 1e6


def fill(log: Log, mib: int, keys: int, per_batch: int = 64) -> int:
    value = os.urandom(1024)
    i = 0
    while log.size_bytes < mib << 20:
        recs = [(1_700_000_000_000 + i + j, b"key-%d" % ((i + j) % keys), value, None)
                for j in range(per_batch)]
        log.append(encode_batch(recs))
        i += per_batch
    log.roll()
    log.append(encode_batch([(1_700_000_000_000 + i, b"tail", value, None)]))
    return log.size_bytes


def raw_rate(directory: str, nbytes: int) -> tuple[float, float]:
    """(read MB/s, write MB/s) of plain 1 MiB os.pread / os.write (+ fsync) on this disk."""
    path = os.path.join(directory, "raw")
    chunk = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t = time.perf_counter()
    for _ in range(nbytes >> 20):
        os.write(fd, chunk)
    os.fsync(fd)
    w = time.perf_counter() - t
    os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    t = time.perf_counter()
    pos = 0
    while os.pread(fd, 1 << 20, pos):
        pos += 1 << 20
    r = time.perf_counter() - t
    os.close(fd)
    os.unlink(path)
    return nbytes / r / MB, nbytes / w / MB


def bench_cleaning(mib: int, keys: int, directory: str) -> None:
    d = tempfile.mkdtemp(dir=directory)
    try:
        cfg = LogConfig(segment_bytes=16 << 20, cleanup_policy="compact",
                        flush_rolled_in_background=False)
        log = Log.open(os.path.join(d, "t-0"), cfg)
        size = fill(log, mib, keys)
        dirty = size - log.active_segment.size
        read_mb, write_mb = raw_rate(d, dirty)
        t = time.perf_counter()
        stats = clean_log(log, None, OffsetMap(128 << 20))
        secs = time.perf_counter() - t
        log.close()
        rate = dirty / secs / MB
        print(f"cleaning: {dirty / MB:.0f} MB dirty -> {stats.bytes_written / MB:.1f} MB in "
              f"{secs:.2f}s = {rate:.0f} MB/s of dirty log (target >= 50)")
        print(f"raw disk, same run: read {read_mb:.0f} MB/s, write+fsync {write_mb:.0f} MB/s; "
              f"cleaning / raw read = {rate / read_mb:.2f}, cleaning / raw write = "
              f"{rate / write_mb:.2f}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _latencies(producer, topic: str, n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        producer.send(topic, key=b"k", value=b"v%d" % i).get(timeout=30)
        out.append(time.perf_counter() - t)
    return out


def _p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100)[98] * 1000


def bench_produce(mib: int, keys: int, directory: str, io_max: float | None,
                  rounds: int) -> None:
    """Rounds of: fill a delete-policy topic, time produce round trips idle, switch the topic
    to compact and time them while the cleaner's pass runs. p99 over all rounds."""
    from kafka import KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    from tests.support.broker import BrokerProcess
    d = tempfile.mkdtemp(dir=directory)
    settings = {"log.cleaner.backoff.ms": 50}
    if io_max:
        settings["log.cleaner.io.max.bytes.per.second"] = io_max
    b = BrokerProcess(os.path.join(d, "data"), settings=settings)
    b.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        admin.create_topics([NewTopic("probe", 1, 1)])
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks=1, linger_ms=0)
        _latencies(p, "probe", 200)                        # warm up
        idle: list[float] = []
        busy: list[float] = []
        value = os.urandom(1024)
        for r in range(rounds):
            topic = f"table{r}"
            admin.create_topics([NewTopic(topic, 1, 1, topic_configs={
                "segment.bytes": str(8 << 20)})])
            bulk = KafkaProducer(bootstrap_servers=b.bootstrap, acks=1, linger_ms=5,
                                 batch_size=256 << 10, max_request_size=4 << 20)
            for i in range((mib << 20) // 1100):
                bulk.send(topic, key=b"key-%d" % (i % keys), value=value)
            bulk.flush()
            bulk.close()
            idle += _latencies(p, "probe", 1000)
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                configs={"cleanup.policy": "compact"})])
            deadline = time.monotonic() + 120
            while f"cleaned {topic}-0" not in b.output() and time.monotonic() < deadline:
                busy += _latencies(p, "probe", 50)
        p.close()
        admin.close()
        base = _p99(idle)
        print(f"produce p99 over {rounds} rounds of {mib} MiB passes: idle {base:.2f} ms "
              f"({len(idle)} requests), while cleaning {_p99(busy):.2f} ms ({len(busy)} "
              f"requests); ratio {_p99(busy) / base:.2f} (target <= 1.5); medians "
              f"{statistics.median(idle) * 1000:.2f} / {statistics.median(busy) * 1000:.2f} ms")
        passes = [line.split("INFO ")[-1] for line in b.output().splitlines()
                  if "cleaned table" in line]
        dirty = secs = 0.0
        for line in passes:
            m = re.search(r"([\d.]+) MB dirty, .* ([\d.]+)s \(", line)
            if m:
                dirty += float(m.group(1))
                secs += float(m.group(2))
        if secs:
            print(f"broker passes (worker process, paced): {dirty / secs:.0f} MB/s of dirty log "
                  f"(target >= 50)")
        for line in passes:
            print("broker:", line)
    finally:
        b.stop()
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--skip-broker", action="store_true")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--io-max", type=float, default=None,
                    help="log.cleaner.io.max.bytes.per.second for the broker part")
    a = ap.parse_args()
    bench_cleaning(a.mib, a.keys, a.dir)
    if not a.skip_broker:
        bench_produce(a.mib, a.keys, a.dir, a.io_max, a.rounds)


if __name__ == "__main__":
    main()
