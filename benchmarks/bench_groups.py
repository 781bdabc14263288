"""Consumer groups on gregor vs tansu, side by side in one run, with confluent-kafka (librdkafka)
as the client: how long a group of 10 members takes to form, and how fast one client commits
offsets (synchronous OffsetCommit, each answered once durable on gregor).

    python benchmarks/bench_groups.py [--members 10] [--seconds 3] [--brokers gregor,tansu]

Rebalance: the 10 consumers subscribe at once (group.initial.rebalance.delay.ms=0 on gregor;
tansu has no such setting and holds a new group's first join for half a session timeout);
the figure is from the first subscribe() to the moment every member holds a share of the
partitions. Commits: one consumer commits explicit offsets synchronously in a loop (commits/s,
p50/p99 latency of one commit), then asynchronously with up to 1000 in flight (completions/s). gregor persists (the commit is fsynced before the
answer), tansu here keeps everything in memory.

    python benchmarks/bench_groups.py --gregor-consumer [--records 200000]

gregor's own consumer in a group against the same consumer with assign(), on one gregor broker,
runs interleaved (assigned, group, assigned, group, ...): records/s from the first record to
the last (the group's join is reported apart), best of 5 runs each, and the ratio
group/assigned.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_broker import GregorBroker, TansuBroker  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def rebalance_seconds(bootstrap: str, members: int) -> float:
    topic = f"rb-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, members * 2)
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                           "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
                 for _ in range(members)]
    try:
        t0 = time.monotonic()
        for c in consumers:
            c.subscribe([topic])
        deadline = t0 + 120
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.01)
            sizes = [len(c.assignment()) for c in consumers]
            if all(sizes) and sum(sizes) == members * 2:
                return time.monotonic() - t0
        raise SystemExit(f"the group of {members} never formed: {sizes}")
    finally:
        for c in consumers:
            c.close()


def commit_rate(bootstrap: str, seconds: float) -> tuple[float, float, float]:
    topic = f"oc-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, 1)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"c-{topic}",
                  "enable.auto.commit": False})
    lat = []
    try:
        for warm in range(20):
            c.commit(offsets=[TopicPartition(topic, 0, warm)], asynchronous=False)
        n = 20
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            n += 1
            t = time.perf_counter()
            c.commit(offsets=[TopicPartition(topic, 0, n)], asynchronous=False)
            lat.append(time.perf_counter() - t)
    finally:
        c.close()
    lat.sort()
    return len(lat) / seconds, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000


def async_commit_rate(bootstrap: str, seconds: float) -> float:
    """Commits in flight at once (commit(asynchronous=True)), as auto-commit and apps that do
    not wait do: completions per second."""
    topic = f"oa-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, 1)
    done = [0]

    def on_commit(err, partitions):
        if err is None:
            done[0] += 1
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"a-{topic}",
                  "enable.auto.commit": False, "on_commit": on_commit})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        n, start = 1, time.monotonic()
        end = start + seconds
        while time.monotonic() < end:
            for _ in range(100):
                n += 1
                c.commit(offsets=[TopicPartition(topic, 0, n)], asynchronous=True)
            c.poll(0)
            while n - done[0] > 1000 and time.monotonic() < end + 10:
                c.poll(0.001)
        while done[0] < n - 1 and time.monotonic() < end + 30:
            c.poll(0.01)
        elapsed = time.monotonic() - start
    finally:
        c.close()
    return done[0] / elapsed


def gregor_read(bootstrap: str, topic: str, partitions: int, total: int, group: str | None,
                batches: bool) -> tuple[float, float]:
    """(seconds from subscribe/assign to the first record, records/s after it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gregor import Consumer as GregorConsumer
    conf = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
            "enable.auto.commit": group is not None}
    if group is not None:
        conf["group.id"] = group
    c = GregorConsumer(conf)
    try:
        t0 = time.perf_counter()
        if group is not None:
            c.subscribe([topic])
        else:
            c.assign([(topic, p) for p in range(partitions)])
        n, first = 0, None
        while n < total:
            got = sum(len(b) for b in c.poll_batches(1.0)) if batches else len(c.poll(1.0))
            if got and first is None:
                first = time.perf_counter()
            n += got
        end = time.perf_counter()
    finally:
        c.close()
    return first - t0, total / (end - first)


def gregor_consumer_bench(records: int, rounds: int = 5) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gregor import Producer as GregorProducer
    b = GregorBroker({"group.initial.rebalance.delay.ms": 0})
    b.start()
    try:
        topic, parts = f"gc-{time.monotonic_ns()}", 4
        create_topic(b.bootstrap, topic, parts)
        p = GregorProducer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
        value = b"x" * 100
        for i in range(0, records, 10000):
            p.send_batch(topic, [value] * min(10000, records - i)).result(60)
        p.close()
        for batches in (False, True):
            best = {"assigned": 0.0, "group": 0.0}
            join = []
            for r in range(rounds):
                for mode in ("assigned", "group"):
                    group = f"bench-{topic}-{r}-{batches}" if mode == "group" else None
                    first, rate = gregor_read(b.bootstrap, topic, parts, records, group,
                                              batches)
                    best[mode] = max(best[mode], rate)
                    if group:
                        join.append(first)
            what = "poll_batches()" if batches else "poll()"
            print(f"gregor consumer {what:15s} assigned {best['assigned']:9.0f} rec/s | group "
                  f"{best['group']:9.0f} rec/s (joined in {min(join) * 1000:.0f} ms) | ratio "
                  f"group/assigned {best['group'] / best['assigned']:.2f}x", flush=True)
    finally:
        b.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--brokers", default="gregor,tansu")
    ap.add_argument("--gregor-consumer", action="store_true",
                    help="compare gregor's consumer in a group with an assigned one instead")
    ap.add_argument("--records", type=int, default=200000)
    args = ap.parse_args()
    if args.gregor_consumer:
        gregor_consumer_bench(args.records)
        return
    results = {}
    for name in args.brokers.split(","):
        b = GregorBroker({"group.initial.rebalance.delay.ms": 0}) if name == "gregor" \
            else TansuBroker()
        b.start()
        try:
            rb = rebalance_seconds(b.bootstrap, args.members)
            rate, p50, p99 = commit_rate(b.bootstrap, args.seconds)
            arate = async_commit_rate(b.bootstrap, args.seconds)
        finally:
            b.stop()
        results[name] = (rb, rate, p50, p99, arate)
        print(f"{name:7s} group of {args.members} formed in {rb:6.2f} s | OffsetCommit sync "
              f"{rate:6.0f}/s p50 {p50:5.2f} ms p99 {p99:5.2f} ms | async {arate:7.0f}/s",
              flush=True)
    if "gregor" in results and "tansu" in results:
        g, t = results["gregor"], results["tansu"]
        print(f"ratios gregor/tansu: rebalance time {g[0] / t[0]:.2f}x, commits/s "
              f"{g[1] / t[1]:.2f}x sync, {g[4] / t[4]:.2f}x async, p99 {g[3] / t[3]:.2f}x")


if __name__ == "__main__":
    main()
