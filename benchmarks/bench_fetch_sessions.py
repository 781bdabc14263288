"""Broker CPU per fetch for a kafka-python consumer of many mostly idle partitions, with KIP-227
fetch sessions (kafka-python's default) against without them, side by side in one run.

    .venv/bin/python benchmarks/bench_fetch_sessions.py [--partitions 1000] [--seconds 8]
                                                        [--repeat 2] [--busy 10]

A gregor broker process serves one topic of --partitions partitions; a producer writes one
small record every 100 ms to one of the first --busy partitions (the rest stay idle); a
kafka-python consumer assigned every partition polls for --seconds, once with
enable_incremental_fetch_sessions=True and once with False, --repeat times, alternating. For
each run: Fetch requests served (the broker's own request counter, from its metrics port),
the broker process's CPU seconds, CPU per fetch, and records read. The ratio is sessions /
sessionless CPU per fetch (the issue's target: <= 0.3). The producer's cost is in both runs.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from gregor.testing import BrokerProcess  # noqa: E402

TOPIC = "idle-many"


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetches_served(metrics_port: int) -> int:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) \
        .read().decode()
    m = re.search(r'^gregor_broker_requests_total\{api="Fetch"\} (\S+)$', text, re.M)
    return int(float(m.group(1))) if m else 0


def consume(bootstrap: str, partitions: int, seconds: float, sessions: bool, mark) -> tuple:
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="latest", fetch_max_wait_ms=100,
                      enable_incremental_fetch_sessions=sessions)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_end(*tps)
        for tp in tps:
            c.position(tp)                 # resolve positions before the measured window
        c.poll(timeout_ms=500)             # the first (full) fetch too
        start = mark()
        got = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            got += sum(len(v) for v in c.poll(timeout_ms=200).values())
        return start, mark(), got
    finally:
        c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--busy", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    mport = free_port()
    broker = BrokerProcess(metrics_port=mport, faults=False)
    broker.start()
    stop = threading.Event()
    try:
        boot = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=boot)
        admin.create_topics([NewTopic(TOPIC, num_partitions=args.partitions,
                                      replication_factor=1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=boot, linger_ms=0)

        def produce():
            i = 0
            while not stop.is_set():
                producer.send(TOPIC, value=b"x" * 100, partition=i % args.busy)
                i += 1
                stop.wait(0.1)
        t = threading.Thread(target=produce, daemon=True)
        t.start()
        results: dict[bool, list] = {True: [], False: []}
        for rnd in range(args.repeat):
            for sessions in (True, False):
                pid = broker.proc.pid
                marks = []

                def mark():
                    # the scrape of the metrics endpoint costs the broker CPU: the window
                    # opens after the first one and closes before the second
                    if not marks:
                        marks.append(fetches_served(mport))
                        return marks[0], cpu_seconds(pid)
                    cpu = cpu_seconds(pid)
                    return fetches_served(mport), cpu
                (f0, c0), (f1, c1), got = consume(boot, args.partitions, args.seconds,
                                                  sessions, mark)
                n, cpu = f1 - f0, c1 - c0
                per = cpu / n * 1e3 if n else float("nan")
                results[sessions].append(per)
                print(f"round {rnd + 1} {'sessions   ' if sessions else 'sessionless'}: "
                      f"{n:5d} fetches, broker {cpu:6.2f} CPU s, {per:6.3f} ms CPU/fetch, "
                      f"{got} records read", flush=True)
        stop.set()
        t.join()
        producer.close(timeout=10)
        best_s, best_n = min(results[True]), min(results[False])
        print(f"{args.partitions} partitions ({args.busy} busy): broker CPU per fetch "
              f"sessions {best_s:.3f} ms vs sessionless {best_n:.3f} ms (best rounds): "
              f"{best_s / best_n:.2f}x")
    finally:
        stop.set()
        broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
