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
        [--cleaner-io-max-bytes-per-second unlimited,120e6,80e6] [--cycles 3] [--loop-probe]

   With a list of settings, a broker runs for each (in turn, --cycles times) and a table of
   their ratios and cleaning rates follows. The throttle counts every byte a pass reads and
   writes, and a pass reads the dirty log twice (to map its keys, then to filter it), so the
   dirty log is cleaned at a little under half the setting.
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


def _latencies(producer, topic: str, n: int, starts: list[float] | None = None) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        if starts is not None:
            starts.append(time.monotonic())
        producer.send(topic, key=b"k", value=b"v%d" % i).get(timeout=30)
        out.append(time.perf_counter() - t)
    return out


def _p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100)[98] * 1000


def _loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "-"


def _rate_name(rate: float | None) -> str:
    return "unlimited" if not rate else f"{rate / MB:g} MB/s"


def _lags(path: str, spans: list[tuple[float, float]]) -> list[float]:
    """The loop probe's lags (seconds) that fell in the given (start, end) spans."""
    out = []
    try:
        with open(path) as f:
            rows = [tuple(map(float, line.split())) for line in f if line.strip()]
    except OSError:
        return out
    for t, lag in rows:
        if any(a <= t < b for a, b in spans):
            out.append(lag)
    return out


def _lag_summary(xs: list[float]) -> str:
    if len(xs) < 100:
        return f"{len(xs)} samples"
    return (f"p50 {statistics.median(xs) * 1000:.3f} / p99 {_p99(xs):.2f} / max "
            f"{max(xs) * 1000:.1f} ms, {sum(x > 0.001 for x in xs)} of {len(xs)} over 1 ms")


def bench_produce(mib: int, keys: int, directory: str, io_max: float | None,
                  rounds: int, loop_probe: bool = False, show_passes: bool = True) -> dict:
    """Rounds of: fill a delete-policy topic, time produce round trips idle, switch the topic
    to compact and time them while the cleaner's pass runs. p99 over all rounds."""
    from kafka import KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    from tests.support.broker import BrokerProcess
    d = tempfile.mkdtemp(dir=directory)
    settings = {"log.cleaner.backoff.ms": 50}
    if io_max:
        settings["log.cleaner.io.max.bytes.per.second"] = io_max
    env = None
    probe_file = os.path.join(d, "loop-probe.txt")
    if loop_probe:
        here = Path(__file__).resolve()
        env = {"GREGOR_LOOP_PROBE": probe_file,
               "PYTHONPATH": os.pathsep.join([str(here.parent / "loop_probe"),
                                              str(here.parents[1]),
                                              os.environ.get("PYTHONPATH", "")])}
    load_before = _loadavg()
    b = BrokerProcess(os.path.join(d, "data"), settings=settings, env=env)
    b.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        admin.create_topics([NewTopic("probe", 1, 1)])
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks=1, linger_ms=0)
        _latencies(p, "probe", 200)                        # warm up
        idle: list[float] = []
        busy: list[float] = []
        busy_starts: list[float] = []
        idle_spans: list[tuple[float, float]] = []
        busy_spans: list[tuple[float, float]] = []
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
            t = time.monotonic()
            idle += _latencies(p, "probe", 1000)
            idle_spans.append((t, time.monotonic()))
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                configs={"cleanup.policy": "compact"})])
            deadline = time.monotonic() + 120
            t = time.monotonic()
            while f"cleaned {topic}-0" not in b.output() and time.monotonic() < deadline:
                busy += _latencies(p, "probe", 50, busy_starts)
            busy_spans.append((t, time.monotonic()))
        p.close()
        admin.close()
        base = _p99(idle)
        res = {"setting": _rate_name(io_max), "load": f"{load_before}-{_loadavg()}",
               "idle": base, "busy": _p99(busy), "ratio": _p99(busy) / base,
               "med_idle": statistics.median(idle) * 1000,
               "med_busy": statistics.median(busy) * 1000, "rate": None,
               "idle_all": idle, "busy_all": busy}
        print(f"[{res['setting']}] produce p99 over {rounds} rounds of {mib} MiB passes: idle "
              f"{base:.2f} ms ({len(idle)} requests), while cleaning {_p99(busy):.2f} ms "
              f"({len(busy)} requests); ratio {res['ratio']:.2f} (target <= 1.5); medians "
              f"{res['med_idle']:.2f} / {res['med_busy']:.2f} ms; load {res['load']}")
        passes = [line.split("INFO ")[-1] for line in b.output().splitlines()
                  if "cleaned table" in line]
        dirty = secs = 0.0
        steps = []
        for line in passes:
            m = re.search(r"([\d.]+) MB dirty, .* ([\d.]+)s \(", line)
            if m:
                dirty += float(m.group(1))
                secs += float(m.group(2))
            m = re.search(r"longest event-loop step ([\d.]+) ms", line)
            if m:
                steps.append(float(m.group(1)))
        if secs:
            res["rate"] = dirty / secs
            print(f"[{res['setting']}] broker passes (worker process, paced): "
                  f"{res['rate']:.0f} MB/s of dirty log (target >= 50); longest event-loop "
                  f"step per pass (ms): {', '.join(f'{x:.2f}' for x in steps)}")
        if loop_probe:
            time.sleep(0.6)                 # the probe writes every 0.5 s
            li, lb = _lags(probe_file, idle_spans), _lags(probe_file, busy_spans)
            res["lag_idle"], res["lag_busy"] = li, lb
            print(f"[{res['setting']}] event-loop lag (call_soon_threadsafe every 2 ms): idle "
                  f"{_lag_summary(li)}; while cleaning {_lag_summary(lb)}")
            # where in a pass the slow requests and loop lags fell: before the worker's pass
            # (picking the log, the snapshot), the pass itself, the broker's swaps after it
            # (from the "cleaned" line's time, its pass seconds and its swap milliseconds)
            offset = time.time() - time.monotonic()
            phases: dict[str, list] = {"before": [], "pass": [], "swaps": []}
            for line in b.output().splitlines():
                m = re.match(r"(\d+-\d+-\d+ \d+:\d+:\d+),(\d+) .*cleaned table\d+-0:.* "
                             r"([\d.]+)s \(.*, swaps ([\d.]+) ms", line)
                if not m:
                    continue
                end = (time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
                       + int(m.group(2)) / 1000 - offset)
                sw, ps = float(m.group(4)) / 1000, float(m.group(3))
                span = next((sp for sp in busy_spans if sp[0] <= end <= sp[1] + 0.1), None)
                if span is None:
                    continue
                phases["before"].append((span[0], end - sw - ps))
                phases["pass"].append((end - sw - ps, end - sw))
                phases["swaps"].append((end - sw, end + 0.002))
            parts = []
            for name, spans in phases.items():
                n = [x for t, x in zip(busy_starts, busy) if any(a <= t < b2 for a, b2 in spans)]
                lags = _lags(probe_file, spans)
                secs = sum(b2 - a for a, b2 in spans)
                parts.append(f"{name} {secs:.2f}s: {sum(x * 1000 > base for x in n)} of {len(n)} "
                             f"requests over the idle p99, {sum(x > 0.001 for x in lags)} of "
                             f"{len(lags)} loop lags over 1 ms (max "
                             f"{max(lags, default=0) * 1000:.1f} ms)")
            print(f"[{res['setting']}] by phase: " + "; ".join(parts))
        if show_passes:
            for line in passes:
                print("broker:", line)
        return res
    finally:
        b.stop()
        shutil.rmtree(d, ignore_errors=True)


def _rates(text: str) -> list[float | None]:
    out: list[float | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        out.append(None if part in ("", "0", "unlimited", "none") else float(part))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--skip-broker", action="store_true")
    ap.add_argument("--skip-cleaning", action="store_true", help="only the broker part")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cleaner-io-max-bytes-per-second", "--io-max", dest="io_max",
                    default="unlimited",
                    help="log.cleaner.io.max.bytes.per.second for the broker part; a comma-"
                         "separated list (bytes per second, 0 or 'unlimited' for none) runs a "
                         "broker for each and prints them side by side, e.g. "
                         "unlimited,120e6,80e6")
    ap.add_argument("--cycles", type=int, default=1,
                    help="run the list of settings this many times (every other cycle in "
                         "reverse order)")
    ap.add_argument("--loop-probe", action="store_true",
                    help="measure the broker's event-loop lag idle and while cleaning")
    a = ap.parse_args()
    if not a.skip_cleaning:
        bench_cleaning(a.mib, a.keys, a.dir)
    if a.skip_broker:
        return
    rates = _rates(a.io_max)
    results = []
    for c in range(a.cycles):
        for rate in (rates if c % 2 == 0 else rates[::-1]):
            results.append(bench_produce(a.mib, a.keys, a.dir, rate, a.rounds, a.loop_probe,
                                         show_passes=len(rates) == 1 and a.cycles == 1))
    if len(results) > 1:
        print()
        print("| setting | load | p99 idle | p99 cleaning | ratio | medians | cleaning MB/s |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            rate = "-" if r["rate"] is None else f"{r['rate']:.0f}"
            print(f"| {r['setting']} | {r['load']} | {r['idle']:.2f} | {r['busy']:.2f} | "
                  f"{r['ratio']:.2f} | {r['med_idle']:.2f} / {r['med_busy']:.2f} | {rate} |")
        print()
        for rate in rates:
            mine = [r for r in results if r["setting"] == _rate_name(rate)]
            ratios = sorted(r["ratio"] for r in mine)
            mbs = [r["rate"] for r in mine if r["rate"]]
            # one run's idle p99 rests on ~40 requests and moves a lot from run to run: the
            # requests of all its runs pooled give a steadier pair
            pi = _p99([x for r in mine for x in r["idle_all"]])
            pb = _p99([x for r in mine for x in r["busy_all"]])
            print(f"{_rate_name(rate)}: ratio median {statistics.median(ratios):.2f} (range "
                  f"{ratios[0]:.2f}-{ratios[-1]:.2f}, {sum(x <= 1.5 for x in ratios)} of "
                  f"{len(ratios)} runs <= 1.5); its runs pooled: p99 idle {pi:.2f} / cleaning "
                  f"{pb:.2f} ms = {pb / pi:.2f}; cleaning "
                  f"{statistics.median(mbs) if mbs else 0:.0f} MB/s median (target >= 50)")
            if mine and "lag_busy" in mine[0]:
                li = [x for r in mine for x in r["lag_idle"]]
                lb = [x for r in mine for x in r["lag_busy"]]
                print(f"    event-loop lag pooled: idle {_lag_summary(li)}; while cleaning "
                      f"{_lag_summary(lb)}")


if __name__ == "__main__":
    main()
