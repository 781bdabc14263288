"""What handing a rolled segment's fsync to another thread costs the event loop's thread.

    .venv/bin/python benchmarks/bench_roll_flush.py [--busy 2] [--rounds 200]

The log used to start a thread per roll (Thread.start() returns only once the new thread has
run, which needs the GIL); it now submits to one shared flusher thread (gregor/log/flush.py
roll_flusher()). Both are timed side by side in one run, with --busy other Python threads
competing for the GIL as the broker's own threads (fsync rounds, fetch reads) do.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    stop = threading.Event()

    def busy():
        x = 0
        while not stop.is_set():
            x += 1
    for _ in range(args.busy):
        threading.Thread(target=busy, daemon=True).start()

    def fsync_like():
        time.sleep(0.001)
    flusher = ThreadPoolExecutor(1)
    flusher.submit(fsync_like).result()
    started, submitted = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        threading.Thread(target=fsync_like, daemon=True).start()
        started.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        flusher.submit(fsync_like)
        submitted.append(time.perf_counter() - t0)
        time.sleep(0.002)
    stop.set()
    flusher.shutdown()

    def q(v):
        return statistics.median(v) * 1e3, sorted(v)[int(len(v) * 0.99)] * 1e3
    (sm, sp), (qm, qp) = q(started), q(submitted)
    print(f"{args.busy} busy threads, {args.rounds} rolls")
    print(f"  thread per roll (before): median {sm:.3f} ms, p99 {sp:.3f} ms")
    print(f"  shared flusher (now):     median {qm:.3f} ms, p99 {qp:.3f} ms")
    print(f"  ratio of medians {sm / qm:.0f}x, of p99s {sp / qp:.0f}x")


if __name__ == "__main__":
    main()
