"""Share groups (KIP-932) against classic consumer groups, side by side in one run, with
confluent-kafka (librdkafka) on both sides and a gregor broker process.

    .venv/bin/python benchmarks/bench_share_groups.py [--slow-records 8000] [--work-ms 1]
                                                      [--fast-records 200000] [--repeat 2]

Both sides of each part read the same records, already in the topic (the share group set to
share.auto.offset.reset=earliest through IncrementalAlterConfigs first), timed from each
side's first record.
1. Slow work: --slow-records records on ONE partition in 50-record batches, each costing
   --work-ms of processing (a sleep, as I/O-bound work is): one classic-group consumer, then
   four share consumers of one share group, each in its own thread. Records per second, and
   share / classic (the reason share groups exist; the target is >= 3.5x with four).
2. No work: --fast-records records on one partition, batched as the producer batches by
   default, read by one classic consumer and by one share consumer (implicit
   acknowledgement). share / classic records per second (the cost of acquisition locks and
   acknowledgements; the target is >= 0.8x), with the broker's and the client's CPU per
   record on each side, and the rate the share client's own CPU per record allows at most.
3. Broker memory per 10,000 in-flight records: the share-partition state of 10,000 acquired
   records, measured with tracemalloc (sans-I/O, in this process).
Each part runs --repeat times alternating the two sides; the best of each side is printed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,  # noqa: E402
                                   ConfigResource, NewTopic, ResourceType)

from gregor.testing import BrokerProcess  # noqa: E402

_seq = iter(range(1_000_000))


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Meter:
    """Records per second from the first record, with the broker's and this process's CPU
    per record over the same interval (the client's CPU is librdkafka's threads and the
    Python loop together)."""

    def __init__(self, broker_pid: int):
        self.pid = broker_pid
        self.t0 = None

    def first(self) -> None:
        if self.t0 is None:
            self.t0, self.b0, self.c0 = (time.perf_counter(), cpu_seconds(self.pid),
                                         time.process_time())

    def done(self, n: int) -> dict:
        elapsed = time.perf_counter() - self.t0
        return {"rate": n / elapsed,
                "broker_us": (cpu_seconds(self.pid) - self.b0) / n * 1e6,
                "client_us": (time.process_time() - self.c0) / n * 1e6}


def new_topic(boot: str, n: int, batch: int | None) -> str:
    name = f"bench-share-{next(_seq)}-{time.time_ns() % 10**6}"
    admin = AdminClient({"bootstrap.servers": boot})      # kept alive until the result
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    fill(boot, name, n, batch)
    return name


def fill(boot: str, topic: str, n: int, batch: int | None) -> None:
    """batch: records per batch (None: the producer's own batching, as applications get)."""
    conf = {"bootstrap.servers": boot, "linger.ms": 5}
    if batch:
        conf["batch.num.messages"] = batch
    p = Producer(conf)
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=b"x" * 100, partition=0)
                break
            except BufferError:                  # the producer's queue is full: let it send
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def classic_rate(boot: str, topic: str, n: int, work_s: float, pid: int) -> dict:
    c = Consumer({"bootstrap.servers": boot, "group.id": f"classic-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": True})
    c.subscribe([topic])
    got, meter = 0, Meter(pid)
    deadline = time.monotonic() + 600
    while got < n and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            if m.error():
                continue
            meter.first()
            got += 1
            if work_s:
                time.sleep(work_s)
    result = meter.done(n)
    c.close()
    assert got == n, f"classic consumer read {got} of {n}"
    return result


def earliest(boot: str, group: str) -> None:
    """share.auto.offset.reset=earliest on the group, as an operator sets it (Kafka's
    kafka-configs --entity-type groups), so the share group reads the records already there,
    as the classic consumer does."""
    admin = AdminClient({"bootstrap.servers": boot})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(30)


def share_rate(boot: str, topic: str, n: int, work_s: float, consumers: int,
               max_poll: int, pid: int) -> tuple[dict, list]:
    group = f"share-{topic}-{consumers}"
    earliest(boot, group)
    cs = [ShareConsumer({"bootstrap.servers": boot, "group.id": group,
                         "max.poll.records": max_poll}) for _ in range(consumers)]
    for c in cs:
        c.subscribe([topic])
    counts = [0] * consumers
    meter = Meter(pid)
    lock = threading.Lock()
    done = threading.Event()

    def run(i: int) -> None:
        c = cs[i]
        while not done.is_set():
            for m in c.poll(0.2):
                if m.error():
                    continue
                with lock:
                    meter.first()
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
    result = meter.done(n)
    for t in threads:
        t.join(30)
    for c in cs:
        c.close()
    assert sum(counts) >= n, f"share consumers read {sum(counts)} of {n}"
    return result, counts


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
    ap.add_argument("--fast-records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        b = BrokerProcess(Path(d) / "data").start()
        try:
            boot, pid = b.bootstrap_servers, b.pid
            work = args.work_ms / 1000.0
            slow_c, slow_s, fast_c, fast_s = [], [], [], []
            for _ in range(args.repeat):
                # 50-record batches: a share-partition hands out whole batches, so the four
                # consumers share the partition batch by batch
                topic = new_topic(boot, args.slow_records, 50)
                slow_c.append(classic_rate(boot, topic, args.slow_records, work, pid))
                r, counts = share_rate(boot, topic, args.slow_records, work, 4, 50, pid)
                slow_s.append(r)
                print(f"  slow: classic {slow_c[-1]['rate']:,.0f}/s, share x4 "
                      f"{r['rate']:,.0f}/s (per consumer {counts})", flush=True)
                topic = new_topic(boot, args.fast_records, None)
                fast_c.append(classic_rate(boot, topic, args.fast_records, 0.0, pid))
                fast_s.append(share_rate(boot, topic, args.fast_records, 0.0, 1, 500, pid)[0])
                c, s = fast_c[-1], fast_s[-1]
                print(f"  fast: classic {c['rate']:,.0f}/s (CPU a record: broker "
                      f"{c['broker_us']:.2f} us, client {c['client_us']:.2f} us), share x1 "
                      f"{s['rate']:,.0f}/s (broker {s['broker_us']:.2f} us, client "
                      f"{s['client_us']:.2f} us)", flush=True)
        finally:
            b.stop()
    mem = memory_per_10k()
    best = (lambda runs: max(runs, key=lambda r: r["rate"]))
    sc, ss, fc, fs = best(slow_c), best(slow_s), best(fast_c), best(fast_s)
    print(f"1. {args.work_ms:g} ms a record, one partition: classic group (1 consumer) "
          f"{sc['rate']:,.0f} rec/s, share group (4 consumers) {ss['rate']:,.0f} rec/s: "
          f"{ss['rate'] / sc['rate']:.2f}x")
    print(f"2. no work, one partition: classic {fc['rate']:,.0f} rec/s, share (1 consumer) "
          f"{fs['rate']:,.0f} rec/s: {fs['rate'] / fc['rate']:.2f}x")
    # librdkafka's share consumer fetches only when its queue is empty, one fetch at a time,
    # so its own CPU per record bounds it even against a broker that costs nothing
    ceiling = 1e6 / fs["client_us"]
    print(f"   CPU a record: classic broker {fc['broker_us']:.2f} us, client "
          f"{fc['client_us']:.2f} us; share broker {fs['broker_us']:.2f} us, client "
          f"{fs['client_us']:.2f} us; the share client alone allows at most "
          f"{ceiling:,.0f} rec/s: {ceiling / fc['rate']:.2f}x")
    print(f"3. broker memory for 10,000 in-flight records of one share-partition: "
          f"{mem / 1024:,.0f} KiB ({mem / 10_000:.1f} bytes a record)")


if __name__ == "__main__":
    main()
