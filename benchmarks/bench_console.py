"""gregor console, measured against one gregor broker, side by side in one run:

1. Message search over N records (1M by default) of one partition: the console's search
   (GET /api/topics/T/messages?q=..., a `gregor console` process) in records scanned per
   second, beside `gregor consume T -p 0 -o 0 -n N | grep -c PATTERN` over the same records;
   the ratio console/grep (goal >= 1x).
2. While that search runs, another page (the cluster page, `/`, which asks the broker) is
   fetched again and again: its latency p50 / p95 / max (goal < 200 ms), beside the same page
   with no search running (this shared machine's own noise).
3. The groups page for 50 groups x 100 partitions: HTML render time, the first one (the
   sampler's first sample included) and warm ones (goal < 1 s); one group's page (time lag
   reads 100 records) too.
4. The broker's CPU for the console's lag sampling of those groups: broker CPU seconds per
   wall second over a window without the console and one with it (sampling every 5 s, and
   every 1 s), the difference in % of one core (goal < 2%).

    python benchmarks/bench_console.py [--records 1000000] [--window 20]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from bench_broker import GregorBroker, cpu_seconds  # noqa: E402
from gregor import AdminClient, Producer  # noqa: E402
from gregor.console.lag import take_sample  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
READY = re.compile(r"gregor console ready on (http://\S+)")
NEEDLE = "status ERROR-needle"
PATTERN = "ERROR-needle"


def fill_search_topic(bootstrap: str, n: int) -> str:
    topic = "bench-console-search"
    with AdminClient({"bootstrap.servers": bootstrap}) as a:
        a.create_topics([topic], num_partitions=1, ignore_existing=True)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "compression.type": "none"})
    chunk = 20_000
    for start in range(0, n, chunk):
        values = [(f"order {i} customer c-{i % 97} amount {i % 1000}.{i % 100:02d} "
                   f"{NEEDLE if i % 10_000 == 7 else 'status ok'} "
                   "padding-padding-padding-padding").encode()
                  for i in range(start, min(n, start + chunk))]
        p.send_batch(topic, values, partition=0)
    p.flush()
    p.close()
    return topic


def fill_groups(bootstrap: str, groups: int, partitions: int) -> list[str]:
    topic = "bench-console-groups"
    with AdminClient({"bootstrap.servers": bootstrap}) as a:
        a.create_topics([topic], num_partitions=partitions, ignore_existing=True)
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for part in range(partitions):
            p.send_batch(topic, [b"x" * 50] * 20, partition=part)
        p.flush()
        p.close()
        ids = [f"bench-group-{i:02d}" for i in range(groups)]
        for i, gid in enumerate(ids):
            a.alter_group_offsets(gid, {(topic, part): (i + part) % 20
                                        for part in range(partitions)})
    return ids


class ConsoleProcess:
    def __init__(self, bootstrap: str, lag_interval: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "console", "--bootstrap-server", bootstrap,
             "--listen", "127.0.0.1:0", "--lag-interval", str(lag_interval)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
            env=dict(os.environ, PYTHONPATH=str(REPO)))
        line = self.proc.stdout.readline()
        m = READY.search(line)
        if not m:
            self.stop()
            raise SystemExit(f"the console did not start: {line}")
        self.url = m.group(1)
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def grep_baseline(bootstrap: str, topic: str, n: int) -> tuple[float, int]:
    cmd = (f"{sys.executable} -m gregor consume {topic} -b {bootstrap} -p 0 -o 0 -n {n} "
           f"2>/dev/null | grep -c -E '{PATTERN}'")
    started = time.perf_counter()
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=str(REPO),
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    return time.perf_counter() - started, int(out.stdout.strip() or 0)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def search_with_probe(url: str, topic: str, n: int) -> dict:
    probe_ms: list[float] = []
    done = threading.Event()
    result = {}

    def probe():
        with httpx.Client(base_url=url, timeout=30) as http:
            time.sleep(0.3)                      # the search is under way
            while not done.is_set():
                t = time.perf_counter()
                r = http.get("/")
                probe_ms.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200
                time.sleep(0.02)
    th = threading.Thread(target=probe)
    th.start()
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=600) as http:
        r = http.get(f"/api/topics/{topic}/messages", params={
            "partition": 0, "order": "oldest", "q": PATTERN, "scan": n, "budget": 600,
            "limit": 500})
    wall = time.perf_counter() - started
    done.set()
    th.join()
    info = r.json()["search"]
    result.update(info, wall=wall, probe_ms=probe_ms)
    return result


def time_page(url: str, path: str, times: int) -> list[float]:
    out = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for _ in range(times):
            t = time.perf_counter()
            r = http.get(path)
            out.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, (path, r.status_code)
    return out


def broker_cpu_pct(pid: int, seconds: float) -> float:
    before, t = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--window", type=float, default=20.0,
                    help="seconds of each broker CPU window")
    args = ap.parse_args()
    broker = GregorBroker({"group.initial.rebalance.delay.ms": 0}).start()
    try:
        bootstrap = broker.bootstrap
        t = time.perf_counter()
        topic = fill_search_topic(bootstrap, args.records)
        print(f"filled {args.records:,} records in {time.perf_counter() - t:.1f} s; "
              f"{args.records // 10_000} match {PATTERN!r}")
        gids = fill_groups(bootstrap, args.groups, args.partitions)
        sample_ms = []
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            for _ in range(5):
                t = time.perf_counter()
                snap = take_sample(admin)
                sample_ms.append((time.perf_counter() - t) * 1000)
        assert len([g for g in snap if g.startswith("bench-group-")]) == args.groups

        # -- broker CPU: no console first ----------------------------------------------------
        idle = broker_cpu_pct(broker.proc.pid, args.window)

        console = ConsoleProcess(bootstrap, lag_interval=5.0)
        try:
            cold = time_page(console.url, "/groups", 1)[0]
            warm = time_page(console.url, "/groups", 10)
            api = time_page(console.url, "/api/groups", 5)
            one = time_page(console.url, f"/groups/{gids[0]}", 5)
            rows = httpx.get(console.url + "/api/groups", timeout=30).json()["groups"]
            assert sum(1 for g in rows if g["group_id"].startswith("bench-group-")) == \
                args.groups
            with_5s = broker_cpu_pct(broker.proc.pid, args.window)

            # -- search vs consume | grep ----------------------------------------------------
            quiet = []
            for _ in range(40):      # the same page with no search running: the machine's noise
                quiet += time_page(console.url, "/", 1)
                time.sleep(0.02)
            g_wall, g_count = grep_baseline(bootstrap, topic, args.records)
            s = search_with_probe(console.url, topic, args.records)
            g2_wall, _ = grep_baseline(bootstrap, topic, args.records)
            s2 = search_with_probe(console.url, topic, args.records)
        finally:
            console.stop()
        console = ConsoleProcess(bootstrap, lag_interval=1.0)
        try:
            time_page(console.url, "/groups", 1)
            with_1s = broker_cpu_pct(broker.proc.pid, args.window)
        finally:
            console.stop()
    finally:
        broker.stop()

    n = args.records
    print()
    print(f"search over {n:,} records of one partition (pattern {PATTERN!r}):")
    print(f"  cluster page with no search running: {len(quiet)} requests, p50 "
          f"{statistics.median(quiet):.0f} ms, p95 {pct(quiet, 0.95):.0f} ms, max "
          f"{max(quiet):.0f} ms")
    for label, res, gw in (("run 1", s, g_wall), ("run 2", s2, g2_wall)):
        grep_rate = n / gw
        print(f"  {label}: console {res['rate']:>9,.0f} records/s (scanned {res['scanned']:,} "
              f"in {res['elapsed_s']:.2f} s, {res['matches']} matches, request "
              f"{res['wall']:.2f} s) | gregor consume | grep {grep_rate:>9,.0f} records/s "
              f"({gw:.2f} s, {g_count} lines) | ratio {res['rate'] / grep_rate:.2f}x")
        p = res["probe_ms"]
        if p:
            print(f"         cluster page while searching: {len(p)} requests, p50 "
                  f"{statistics.median(p):.0f} ms, p95 {pct(p, 0.95):.0f} ms, max "
                  f"{max(p):.0f} ms")
    print(f"groups page, {args.groups} groups x {args.partitions} partitions: first "
          f"{cold:.0f} ms (first request after the console started), then median "
          f"{statistics.median(warm):.0f} ms, max {max(warm):.0f} ms; /api/groups median "
          f"{statistics.median(api):.0f} ms; one group's page (lag and time lag of "
          f"{args.partitions} partitions) median {statistics.median(one):.0f} ms; one lag "
          f"sample of them (in this process) median {statistics.median(sample_ms):.0f} ms")
    print(f"broker CPU over {args.window:.0f} s windows: no console {idle:.2f}% of a core, "
          f"console sampling every 5 s {with_5s:.2f}% (+{with_5s - idle:.2f}), every 1 s "
          f"{with_1s:.2f}% (+{with_1s - idle:.2f})")


if __name__ == "__main__":
    main()
