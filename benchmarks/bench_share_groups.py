"""Share groups (KIP-932) against classic consumer groups, side by side in one run, with
confluent-kafka (librdkafka) on both sides and a gregor broker process.

    .venv/bin/python benchmarks/bench_share_groups.py [--slow-records 8000] [--work-ms 1]
                                                      [--fast-records 50000] [--repeat 2]

1. Slow work: --slow-records records on ONE partition, each costing --work-ms of processing
   (a sleep, as I/O-bound work is): one classic-group consumer, then four share consumers of
   one share group, each in its own thread. Records per second, and share / classic
   (the reason share groups exist; the target is >= 3.5x with four consumers).
2. No work: --fast-records records on one partition read by one classic consumer and by one
   share consumer (implicit acknowledgement). share / classic records per second (the cost of
   acquisition locks and acknowledgements; the target is >= 0.8x).
3. Broker memory per 10,000 in-flight records: the share-partition state of 10,000 acquired
   records, measured with tracemalloc (sans-I/O, in this process).
Each part runs --repeat times alternating the two sides; the best of each side is printed.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor.testing import BrokerProcess  # noqa: E402

_seq = iter(range(1_000_000))


def new_topic(boot: str, n: int) -> str:
    name = f"bench-share-{next(_seq)}-{time.time_ns() % 10**6}"
    admin = AdminClient({"bootstrap.servers": boot})      # kept alive until the result
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    if n:
        fill(boot, name, n)
    return name


def fill(boot: str, topic: str, n: int) -> None:
    # batches of 50: a share-partition acquires whole batches, so consumers split them
    p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "batch.num.messages": 50})
    for i in range(n):
        p.produce(topic, value=b"x" * 100, partition=0)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def classic_rate(boot: str, n: int, work_s: float) -> float:
    topic = new_topic(boot, n)
    c = Consumer({"bootstrap.servers": boot, "group.id": f"classic-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": True})
    c.subscribe([topic])
    got, t0 = 0, None
    deadline = time.monotonic() + 600
    while got < n and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            if m.error():
                continue
            if t0 is None:
                t0 = time.perf_counter()
            got += 1
            if work_s:
                time.sleep(work_s)
    elapsed = time.perf_counter() - t0
    c.close()
    assert got == n, f"classic consumer read {got} of {n}"
    return n / elapsed


def _share_ready(boot: str, group: str, consumers) -> None:
    """Poll until the group's share-partition has started (share.auto.offset.reset is latest,
    so the records are written after that)."""
    from gregor.testing.wire import WireClient
    host, port = boot.rsplit(":", 1)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for c in consumers:
            list(c.poll(0.1))
        with WireClient(int(port), host) as w:
            o = w.request("DescribeShareGroupOffsets", 0,
                          {"groups": [{"group_id": group, "topics": None}]})
        g = o["groups"][0]
        d_members = w_members(boot, group)
        if not g["error_code"] and any(p["start_offset"] >= 0 for t in g["topics"]
                                       for p in t["partitions"]) and \
                d_members >= len(consumers):
            return
    raise RuntimeError("the share consumers never started")


def w_members(boot: str, group: str) -> int:
    from gregor.testing.wire import WireClient
    host, port = boot.rsplit(":", 1)
    with WireClient(int(port), host) as w:
        d = w.request("ShareGroupDescribe", 1, {"group_ids": [group],
                                                "include_authorized_operations": False})
    return len(d["groups"][0]["members"])


def share_rate(boot: str, n: int, work_s: float, consumers: int, max_poll: int) -> float:
    topic = new_topic(boot, 0)
    group = f"share-{topic}"
    cs = [ShareConsumer({"bootstrap.servers": boot, "group.id": group,
                         "max.poll.records": max_poll}) for _ in range(consumers)]
    for c in cs:
        c.subscribe([topic])
    _share_ready(boot, group, cs)
    fill(boot, topic, n)
    counts = [0] * consumers
    first: list[float] = []
    lock = threading.Lock()
    done = threading.Event()

    def run(i: int) -> None:
        c = cs[i]
        while not done.is_set():
            for m in c.poll(0.2):
                if m.error():
                    continue
                if not first:
                    with lock:
                        first.append(time.perf_counter())
                if work_s:
                    time.sleep(work_s)
                with lock:
                    counts[i] += 1
                    if sum(counts) >= n:
                        done.set()
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(consumers)]
    for t in threads:
        t.start()
    done.wait(600)
    elapsed = time.perf_counter() - first[0]
    for t in threads:
        t.join(30)
    for c in cs:
        c.close()
    assert sum(counts) >= n, f"share consumers read {sum(counts)} of {n}"
    return n / elapsed, counts


def memory_per_10k() -> float:
    from gregor.broker.share.partition_state import SharePartition
    n = 10_000

    def batches(offset):
        for base in range(offset, n, 50):
            yield base, base + 49, False
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    sp = SharePartition(0, max_record_locks=n)
    got = sp.acquire("member-1", n, batches, 0, 30000)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert sum(a.last_offset - a.first_offset + 1 for a in got) == n and sp.in_flight() == n
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del got
    return grown


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slow-records", type=int, default=8000)
    ap.add_argument("--work-ms", type=float, default=1.0)
    ap.add_argument("--fast-records", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        b = BrokerProcess(Path(d) / "data").start()
        try:
            boot = b.bootstrap
            work = args.work_ms / 1000.0
            slow_c, slow_s, fast_c, fast_s = [], [], [], []
            for _ in range(args.repeat):
                slow_c.append(classic_rate(boot, args.slow_records, work))
                rate, counts = share_rate(boot, args.slow_records, work, 4, 50)
                slow_s.append(rate)
                print(f"  slow: classic {slow_c[-1]:,.0f}/s, share x4 {rate:,.0f}/s "
                      f"(per consumer {counts})", flush=True)
                fast_c.append(classic_rate(boot, args.fast_records, 0.0))
                fast_s.append(share_rate(boot, args.fast_records, 0.0, 1, 500)[0])
                print(f"  fast: classic {fast_c[-1]:,.0f}/s, share x1 {fast_s[-1]:,.0f}/s",
                      flush=True)
        finally:
            b.stop()
    mem = memory_per_10k()
    print(f"1. {args.work_ms:g} ms a record, one partition: classic group (1 consumer) "
          f"{max(slow_c):,.0f} rec/s, share group (4 consumers) {max(slow_s):,.0f} rec/s: "
          f"{max(slow_s) / max(slow_c):.2f}x")
    print(f"2. no work, one partition: classic {max(fast_c):,.0f} rec/s, share (1 consumer) "
          f"{max(fast_s):,.0f} rec/s: {max(fast_s) / max(fast_c):.2f}x")
    print(f"3. broker memory for 10,000 in-flight records of one share-partition: "
          f"{mem / 1024:,.0f} KiB ({mem / 10_000:.1f} bytes a record)")


if __name__ == "__main__":
    main()
