"""The broker's lz4 check of a produced batch: a fresh buffer per batch vs the thread's buffer.

    .venv/bin/python benchmarks/bench_scratch_decompress.py [--rounds 30]

Decompresses the same lz4 frame again and again, as the broker does to check each produced
batch's records: through compression.decompress (a new output buffer each time) and through
scratch_decompress.decompress_transient (a buffer the thread keeps), for frames of 1 MiB and
8 MiB of records of 100 B, with a content size in the header (gregor's producer) and without
(Kafka's Java producer, librdkafka). Prints CPU ns per record (best of 3 runs of --rounds)
and the ratio. Each measurement runs in a new process: whether a fresh buffer costs fresh
pages depends on malloc's history in the process (its mmap threshold adapts to what was
freed before), and on these machines the page faults, not lz4, are the cost.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import lz4.frame

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gregor.protocol import scratch_decompress as sd  # noqa: E402
from gregor.protocol.compression import LZ4, decompress  # noqa: E402


def cpu_per_record(fn, records: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(3):
        c0 = time.process_time()
        for _ in range(rounds):
            fn()
        best = min(best, (time.process_time() - c0) / rounds / records)
    return best * 1e9


def measure(mib: int, sized: bool, kept: bool, rounds: int) -> float:
    records = mib * 10_000
    data = b"".join(b"%020d" % i + b"v" * 80 for i in range(records))
    frame = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                               block_linked=False, store_size=sized)
    if kept:
        assert bytes(sd.decompress_transient(LZ4, frame, 1 << 28)) == data
        return cpu_per_record(lambda: sd.decompress_transient(LZ4, frame, 1 << 28), records,
                              rounds)
    assert decompress(LZ4, frame, 1 << 28) == data
    return cpu_per_record(lambda: decompress(LZ4, frame, 1 << 28), records, rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--case", help=argparse.SUPPRESS)    # MIB,SIZED,KEPT: one measurement
    args = ap.parse_args()
    if args.case:
        mib, sized, kept = (int(x) for x in args.case.split(","))
        print(measure(mib, bool(sized), bool(kept), args.rounds))
        return

    def run(*case) -> float:
        out = subprocess.run([sys.executable, __file__, "--rounds", str(args.rounds), "--case",
                              ",".join(str(int(x)) for x in case)],
                             check=True, capture_output=True, text=True).stdout
        return float(out.strip())

    print(f"{'frame':<34} {'fresh buffer':>14} {'kept buffer':>13} {'ratio':>7}")
    for mib in (1, 8):
        for sized in (True, False):
            old, new = run(mib, sized, False), run(mib, sized, True)
            label = f"{mib} MiB, {'content size' if sized else 'no content size (Java)'}"
            print(f"{label:<34} {old:11.1f} ns {new:10.1f} ns {old / new:6.1f}x")


if __name__ == "__main__":
    main()
