"""Replication on a local gregor cluster, confluent-kafka as the client, ratios in one run.

    .venv/bin/python benchmarks/bench_cluster.py [--records 300000] [--rate 10000]
                                                 [--latency-seconds 5] [--repeat 2]

Runs `gregor cluster --brokers 3` (ZooKeeper + three brokers on this machine) and measures:
1. throughput: --records records (10 B keys, 100 B values, linger.ms=5, one partition) with
   acks=all to a topic with RF 3 and min.insync.replicas=2, against acks=1 to a topic with
   RF 1 on the same cluster, the producer otherwise configured the same; msgs/s and the ratio
   (issue target >= 0.6x; Kafka's published 2014 figure is 0.51x, also with one producer
   configuration for both); then acks=all with an idempotent producer, which librdkafka
   limits to 5 requests in flight (acks=1 cannot be idempotent), printed beside it;
2. latency: a steady --rate msgs/s for --latency-seconds, linger.ms=0, in-flight 5, acks=all,
   RF 3: p50 / p99 from produce() to the delivery report (target p99 <= 5 ms), beside acks=1
   RF 1 in the same run;
3. failover: kill -9 of the RF 3 partition's leader while a producer sends acks=all records
   one at a time; the time from the kill to the first acknowledged record after it (target
   <= zookeeper.session.timeout.ms + 1 s), and whether any record acknowledged before the
   kill is missing afterwards;
4. a broker paused past its ZooKeeper session: SIGSTOP of the RF 3 partition's leader until
   ZooKeeper expired its session and the others took over, then SIGCONT; the seconds from
   SIGCONT until it registered again, until it answers a fresh client's Metadata, and until
   every broker answers with the ISR full (issue 21: serving within a second of registering);
5. several brokers, several cores: 6 partitions with RF 1 over three brokers vs 6 partitions
   on one single-node broker, acks=1 (the issue asks >= 1.8x on >= 3 free cores; on a 2-core
   machine with one client process it is reported, not judged).
`--pause-rounds N` runs only issue 21's pause test instead: zookeeper.session.timeout.ms 3000,
replica.lag.time.max.ms 4000, a topic with 3 partitions, RF 3, min.insync.replicas 2, an
idempotent acks=all producer running; N rounds of a partition leader paused past its session
(at least --pause-seconds, 5 by default, as in the issue);
each round's times, every broker still serving at the end, nothing acknowledged lost or
duplicated (exit code 1 otherwise).

The best of --repeat rounds is printed for throughput and the median of the rounds' p99 for
latency (this machine is shared and noisy: compare ratios within one run).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_broker import GregorBroker, produce_latency  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SESSION_MS = 6000
BROKER_LINE = re.compile(r"broker (\d+) ready on (\S+) \(pid (\d+)")
ZK_LINE = re.compile(r"zookeeper ready on (\S+) ")
VALUE = b"v" * 100


class LocalCluster:
    def __init__(self, brokers: int = 3, settings: dict | None = None, secure: bool = False):
        self.dir = tempfile.mkdtemp(prefix="bench-cluster-")
        self.brokers = brokers
        self.secure = secure              # gregor cluster --secure
        self.client: dict = {}            # client settings (the admin user's when secure)
        self.settings = dict(settings or {})
        self.pids: dict[int, int] = {}
        self.addresses: dict[int, str] = {}
        self.bootstrap = ""
        self.zk_hosts = ""
        self.proc = None

    def start(self) -> "LocalCluster":
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "cluster", "--brokers", str(self.brokers),
             "--port", "0", "--data-dir", self.dir,
             "--set", f"zookeeper.session.timeout.ms={SESSION_MS}",
             *(["--secure"] if self.secure else []),
             *[a for k, v in self.settings.items() for a in ("--set", f"{k}={v}")]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in self.proc.stdout:
            z = ZK_LINE.search(line)
            if z:
                self.zk_hosts = z.group(1)
            m = BROKER_LINE.search(line)
            if m:
                self.pids[int(m.group(1))] = int(m.group(3))
                self.addresses[int(m.group(1))] = m.group(2)
            if "gregor cluster ready on" in line:
                self.bootstrap = line.rsplit(" ", 1)[1].strip()
                if not self.secure:
                    break
            if line.startswith("  confluent-kafka: "):
                self.client = json.loads(line.split(": ", 1)[1])
                break
        if not self.bootstrap or (self.secure and not self.client):
            raise SystemExit("gregor cluster did not start")
        self.client["bootstrap.servers"] = self.bootstrap
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def create(bootstrap: str, name: str, partitions: int, rf: int, client: dict | None = None,
           **configs) -> None:
    admin = AdminClient({**(client or {}), "bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf, config={
        k: str(v) for k, v in configs.items()})])[name].result(60)
    # every partition led and (for RF > 1) followed before measuring
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=10).topics[name]
        if len(md.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == rf for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise SystemExit(f"topic {name} did not get its leaders and ISR")


def throughput(bootstrap: str, topic: str, records: int, acks: str, partitions: int = 1,
               idempotent: bool = False, client: dict | None = None) -> float:
    errors = []
    p = Producer({**(client or {}), "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                  "enable.idempotence": idempotent, "queue.buffering.max.messages": 500_000,
                  "delivery.report.only.error": True,
                  "on_delivery": lambda err, msg: errors.append(err)})
    keys = [b"key-%06d" % i for i in range(100_000)]
    p.produce(topic, VALUE, b"warmup-000", 0)
    p.flush(30)
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, VALUE, keys[i % len(keys)], i % partitions)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    if left or errors:
        raise SystemExit(f"{left} undelivered, {len(errors)} errors: {errors[:3]}")
    return records / dt


def failover(c: LocalCluster, topic: str) -> dict:
    """Kill -9 the partition's leader under a one-at-a-time acks=all producer."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 0,
                  "enable.idempotence": True, "message.timeout.ms": 60000,
                  "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
                  "topic.metadata.refresh.interval.ms": 500})
    acked: list[tuple[float, int, bytes]] = []
    errors = []

    def cb(err, msg):
        if err is None:
            acked.append((time.perf_counter(), msg.offset(), msg.value()))
        else:
            errors.append(err)
    for i in range(200):                      # warm: leader known, connection up
        p.produce(topic, b"before-%d" % i, partition=0, on_delivery=cb)
    p.flush(30)
    before = len(acked)
    seen_at = watch_failover(c, topic, leader)
    os.kill(c.pids[leader], signal.SIGKILL)
    killed = time.perf_counter()
    seen_at["killed"] = killed
    i = 0
    while time.perf_counter() - killed < 60:
        p.produce(topic, b"after-%d" % i, partition=0, on_delivery=cb)
        i += 1
        p.poll(0.005)
        if len(acked) > before:
            break
    p.flush(60)
    first = acked[before][0] - killed if len(acked) > before else float("nan")
    # every record acknowledged before the kill must still be there, at its offset
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "check",
                     "enable.auto.commit": False})
    cons.assign([TopicPartition(topic, 0, 0)])
    seen = {}
    deadline = time.monotonic() + 60
    want = {v: o for _, o, v in acked}
    while len(seen) < len(want) and time.monotonic() < deadline:
        for m in cons.consume(500, 1.0):
            if not m.error():
                seen[m.value()] = m.offset()
    cons.close()
    lost = [v for v, o in want.items() if seen.get(v) != o]
    steps = {k: v - killed for k, v in seen_at.items() if k != "killed"}
    return {"seconds": first, "lost": len(lost), "acked": len(acked), "errors": len(errors),
            **steps}


def watch_failover(c: LocalCluster, topic: str, leader: int) -> dict:
    """Polls ZooKeeper (every 10 ms, in a thread) for when the killed leader's registration
    disappears (its session expired) and when the partition's state names another leader,
    then a surviving broker's Metadata for when clients can see it."""
    from kazoo.client import KazooClient
    import json
    zk = KazooClient(hosts=c.zk_hosts + "/gregor")
    zk.start(10)
    seen: dict[str, float] = {}

    def poll():
        try:
            while "elected" not in seen and time.perf_counter() - seen.get("killed", 1e18) < 60:
                now = time.perf_counter()
                if "expired" not in seen and zk.exists(f"/brokers/ids/{leader}") is None:
                    seen["expired"] = now
                data, _ = zk.get(f"/brokers/topics/{topic}/partitions/0/state")
                if json.loads(data)["leader"] not in (leader, -1):
                    seen["elected"] = now
                time.sleep(0.01)
            others = ",".join(a for i, a in sorted(c.addresses.items()) if i != leader)
            admin = AdminClient({"bootstrap.servers": others})
            while time.perf_counter() - seen["elected"] < 30:
                md = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
                if md.leader not in (leader, -1):
                    seen["metadata"] = time.perf_counter()
                    break
                time.sleep(0.01)
        finally:
            zk.stop()
            zk.close()
    threading.Thread(target=poll, daemon=True).start()
    return seen


# -- a broker paused past its ZooKeeper session (issue 21) ----------------------------------

def answers(address: str, topic: str, brokers: int, full_isr: bool) -> bool:
    """The broker at `address` answers a fresh confluent-kafka client's Metadata (ApiVersions
    first, as librdkafka does) naming `brokers` brokers and a leader per partition of the
    topic (and, with full_isr, every ISR full)."""
    admin = AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 1000,
                         "log_level": 0})
    try:
        md = admin.list_topics(topic, timeout=1.0)
    except KafkaException:
        return False
    if md.orig_broker_name.split("/")[0] != address:    # "host:port/id" answered
        return False
    t = md.topics.get(topic)
    if len(md.brokers) != brokers or t is None or t.error or not t.partitions:
        return False
    parts = t.partitions.values()
    return all(p.leader in md.brokers for p in parts) and (
        not full_isr or all(set(p.isrs) == set(p.replicas) for p in parts))


class PauseWatch:
    """Reads ZooKeeper (kazoo) for a broker's registration and the partitions' states."""

    def __init__(self, c: LocalCluster, topic: str, partitions: int):
        from kazoo.client import KazooClient
        self.topic, self.partitions = topic, partitions
        self.zk = KazooClient(hosts=c.zk_hosts + "/gregor")
        self.zk.start(10)

    def epoch(self, broker: int) -> int:
        stat = self.zk.exists(f"/brokers/ids/{broker}")
        return -1 if stat is None else stat.czxid

    def state(self, p: int) -> dict:
        import json
        return json.loads(self.zk.get(f"/brokers/topics/{self.topic}/partitions/{p}/state")[0])

    def controller(self) -> int:
        import json
        try:
            return json.loads(self.zk.get("/controller")[0])["brokerid"]
        except Exception:
            return -1

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


def pause_once(c: LocalCluster, w: PauseWatch, victim: int, min_pause: float = 0.0,
               limit: float = 60.0) -> dict:
    """SIGSTOP `victim` until ZooKeeper expired its session and the others took over (and at
    least min_pause seconds), SIGCONT, then the seconds from SIGCONT until it registered again
    (new broker epoch), until it answers Metadata, until every broker answers with every ISR
    full."""
    epoch = w.epoch(victim)
    os.kill(c.pids[victim], signal.SIGSTOP)
    stopped = time.perf_counter()
    try:
        while time.perf_counter() - stopped < limit and (
                w.epoch(victim) != -1 or w.controller() in (victim, -1) or any(
                w.state(p)["leader"] == victim for p in range(w.partitions))):
            time.sleep(0.02)
        time.sleep(max(0.0, stopped + min_pause - time.perf_counter()))
    finally:
        os.kill(c.pids[victim], signal.SIGCONT)
    resumed = time.perf_counter()
    out = {"paused": resumed - stopped}
    n = len(c.pids)
    while time.perf_counter() - resumed < limit:
        now = time.perf_counter() - resumed
        if "registered" not in out and w.epoch(victim) > epoch:
            out["registered"] = now
        if "registered" in out and "serving" not in out and \
                answers(c.addresses[victim], w.topic, n, False):
            out["serving"] = time.perf_counter() - resumed
        if "serving" in out and all(answers(a, w.topic, n, True)
                                    for a in c.addresses.values()):
            out["whole"] = time.perf_counter() - resumed
            break
        time.sleep(0.01)
    return out


def fmt(x) -> str:
    return f"{x:.2f} s" if x is not None else "never"


def pause_rounds(rounds: int, min_pause: float) -> int:
    """--pause-rounds N: the issue's setup (session 3 s, lag 4 s, 3 partitions, RF 3, min ISR
    2, an idempotent acks=all producer running); N rounds of a leader paused past its session,
    each round's broker serving again, every broker still serving at the end, nothing
    acknowledged lost or duplicated."""
    session_ms, lag_ms = 3000, 4000
    c = LocalCluster(3, {"zookeeper.session.timeout.ms": session_ms,
                         "replica.lag.time.max.ms": lag_ms}).start()
    failures = []
    try:
        create(c.bootstrap, "pause", 3, 3, **{"min.insync.replicas": 2})
        w = PauseWatch(c, "pause", 3)
        acked: dict[bytes, tuple[int, int]] = {}
        errors: list = []
        stop = threading.Event()

        def produce():
            p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                          "enable.idempotence": True, "linger.ms": 2,
                          "message.timeout.ms": 120000, "request.timeout.ms": 5000,
                          "socket.timeout.ms": 10000,
                          "topic.metadata.refresh.interval.ms": 1000})

            def cb(err, msg):
                if err is None:
                    acked[msg.value()] = (msg.partition(), msg.offset())
                else:
                    errors.append(err)
            i = 0
            while not stop.is_set():
                for _ in range(20):
                    while True:
                        try:
                            p.produce("pause", b"v-%d" % i, b"k%d" % (i % 8), on_delivery=cb)
                            break
                        except BufferError:
                            p.poll(0.05)
                    i += 1
                p.poll(0.01)
            p.flush(120)
        t = threading.Thread(target=produce, daemon=True)
        t.start()
        print(f"\n{rounds} rounds: the leader of a partition SIGSTOPped until its ZooKeeper "
              f"session ({session_ms} ms) expired and the others took over, at least "
              f"{min_pause:g} s, then SIGCONT (replica.lag.time.max.ms {lag_ms}); seconds "
              "after SIGCONT:")
        within = lag_ms / 1000 + 2
        for r in range(rounds):
            before = len(acked)
            deadline = time.monotonic() + 60
            while len(acked) < before + 500 and time.monotonic() < deadline:
                time.sleep(0.05)
            victim = w.state(r % 3)["leader"]
            ctrl = w.controller()
            got = pause_once(c, w, victim, min_pause)
            ok = got.get("whole", 1e9) <= within
            print(f"  round {r + 1:2d}: broker {victim}{' (controller)' if victim == ctrl else ''}"
                  f" paused {got['paused']:.1f} s; registered again {fmt(got.get('registered'))}"
                  f", serving Metadata {fmt(got.get('serving'))}, every ISR full "
                  f"{fmt(got.get('whole'))}{'' if ok else '  <-- over ' + str(within) + ' s'}",
                  flush=True)
            if not ok:
                failures.append(f"round {r + 1}")
        # still serving once a session timeout has passed after the last round
        time.sleep(session_ms / 1000 + 1)
        end = {b: answers(a, "pause", 3, True) for b, a in sorted(c.addresses.items())}
        print(f"  {session_ms / 1000 + 1:.0f} s after the last round, every broker serving "
              f"with full ISRs: {end}")
        if not all(end.values()):
            failures.append("not serving at the end")
        stop.set()
        t.join(150)
        w.close()
        seen: dict[bytes, set] = {}
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "check",
                         "enable.auto.commit": False})
        cons.assign([TopicPartition("pause", p, 0) for p in range(3)])
        deadline = time.monotonic() + 120
        while len(seen) < len(acked) and time.monotonic() < deadline:
            for m in cons.consume(1000, 1.0):
                if not m.error():
                    seen.setdefault(m.value(), set()).add((m.partition(), m.offset()))
        cons.close()
        lost = [v for v, where in acked.items() if where not in seen.get(v, ())]
        dup = [v for v, where in seen.items() if len(where) > 1]
        print(f"  {len(acked):,} records acknowledged: {len(lost)} lost, {len(dup)} duplicated, "
              f"{len(errors)} delivery errors")
        if lost or dup or errors:
            failures.append("records lost, duplicated or failed")
    finally:
        for pid in c.pids.values():
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        c.stop()
    print("  PASS" if not failures else f"  FAIL: {', '.join(failures)}")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--pause-rounds", type=int, default=0, metavar="N",
                    help="only run N rounds of a leader paused past its ZooKeeper session "
                         "(issue 21's setup) and report each broker's return to service")
    ap.add_argument("--pause-seconds", type=float, default=5.0,
                    help="with --pause-rounds: pause at least this long (issue 21: 5 s)")
    args = ap.parse_args()
    if args.pause_rounds:
        return pause_rounds(args.pause_rounds, args.pause_seconds)
    c = LocalCluster(3).start()
    single = GregorBroker().start()
    try:
        b = c.bootstrap
        create(b, "rf1", 1, 1)
        create(b, "rf3", 1, 3, **{"min.insync.replicas": 2})
        create(b, "six", 6, 1)
        single_admin = AdminClient({"bootstrap.servers": single.bootstrap})
        single_admin.create_topics([NewTopic("six", 6, 1)])["six"].result(60)
        tp = {"rf1": [], "rf3": [], "rf3_idem": [], "six3": [], "six1": []}
        lat = {"rf1": [], "rf3": []}
        for _ in range(args.repeat):
            tp["rf1"].append(throughput(b, "rf1", args.records, "1"))
            tp["rf3"].append(throughput(b, "rf3", args.records, "all"))
            tp["rf3_idem"].append(throughput(b, "rf3", args.records, "all", idempotent=True))
            tp["six3"].append(throughput(b, "six", args.records, "1", 6))
            tp["six1"].append(throughput(single.bootstrap, "six", args.records, "1", 6))
            for name, acks in (("rf1", "1"), ("rf3", "all")):
                lat[name].append(produce_latency(b, name, args.rate, args.latency_seconds,
                                                 {"acks": acks,
                                                  "max.in.flight.requests.per.connection": 5}))
        w = PauseWatch(c, "rf3", 1)
        try:
            pz = pause_once(c, w, w.state(0)["leader"])
        finally:
            w.close()
        fo = failover(c, "rf3")
    finally:
        c.stop()
        single.stop()
    best = {k: max(v) for k, v in tp.items()}
    print(f"\ngregor cluster, 3 brokers on one {os.cpu_count()}-core machine, "
          f"{args.records:,} records x {args.repeat} rounds (best)")
    print(f"  acks=1, RF 1          {best['rf1']:>12,.0f} msgs/s")
    print(f"  acks=all, RF 3, ISR 2 {best['rf3']:>12,.0f} msgs/s   "
          f"ratio {best['rf3'] / best['rf1']:.2f}x (target >= 0.6x; same producer settings)")
    print(f"  the same, idempotent  {best['rf3_idem']:>12,.0f} msgs/s   "
          f"ratio {best['rf3_idem'] / best['rf1']:.2f}x (at most 5 requests in flight)")
    for name, label in (("rf1", "acks=1, RF 1  "), ("rf3", "acks=all, RF 3")):
        p99s = [r["p99_ms"] for r in lat[name]]
        print(f"  latency {label} at {args.rate:,}/s, in-flight 5: p50 "
              f"{statistics.median(r['p50_ms'] for r in lat[name]):.2f} ms, p99 median "
              f"{statistics.median(p99s):.2f} ms (rounds: "
              f"{', '.join(f'{x:.2f}' for x in p99s)})"
              + ("  (target p99 <= 5 ms)" if name == "rf3" else ""))
    print(f"  failover: kill -9 of the leader -> first acks=all record acknowledged "
          f"{fo['seconds']:.2f} s (session timeout {SESSION_MS / 1000:.0f} s; target <= "
          f"{SESSION_MS / 1000 + 1:.0f} s); acknowledged records missing after: {fo['lost']} "
          f"of {fo['acked']}")
    print(f"    of which: session expired after {fo.get('expired', float('nan')):.2f} s, new "
          f"leader in ZooKeeper after {fo.get('elected', float('nan')):.2f} s, in a surviving "
          f"broker's Metadata after {fo.get('metadata', float('nan')):.2f} s, first "
          f"acknowledgement {fo['seconds'] - fo.get('elected', float('nan')):.2f} s after the "
          "election")
    print(f"  pause: SIGSTOP of the leader until its session expired and another took over "
          f"({pz['paused']:.1f} s), then SIGCONT -> registered again {fmt(pz.get('registered'))}"
          f" -> serving Metadata {fmt(pz.get('serving'))} -> every ISR full "
          f"{fmt(pz.get('whole'))} (target: serving within 1 s of registering)")
    print(f"  6 partitions RF 1: 3 brokers {best['six3']:,.0f} msgs/s vs 1 broker "
          f"{best['six1']:,.0f} msgs/s = {best['six3'] / best['six1']:.2f}x "
          f"(one client process; reported, not judged on {os.cpu_count()} cores)")
    return 1 if fo["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
