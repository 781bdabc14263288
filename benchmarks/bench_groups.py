"""Consumer groups on gregor vs tansu, side by side in one run: how long a group of 10 members
takes to form, and how fast one client commits offsets (each OffsetCommit answered once durable
on gregor: after the group-commit fsync; tansu here keeps everything in memory).

    python benchmarks/bench_groups.py [--members 10] [--seconds 3] [--brokers gregor,tansu]
                                      [--tree before=/path/to/other/tree] [--windows 1,16,256]

Rebalance (confluent-kafka, librdkafka): the 10 consumers subscribe at once
(group.initial.rebalance.delay.ms=0 on gregor; tansu has no such setting and holds a new
group's first join for half a session timeout). Three figures, all ending when every member
holds a share of the partitions (seen by the application's poll()):
  - "formed": from the first subscribe();
  - "last join": from the last JoinGroup request any member sent (the issue's figure: what the
    coordinator takes once the last member asked to join);
  - "last arrival": from the first JoinGroup of the member that came last, which also counts
    the clients' own rejoin timers (librdkafka sends JoinGroup at most once a second unless a
    revoke or MEMBER_ID_REQUIRED resets its timer, so a member whose SyncGroup was refused with
    REBALANCE_IN_PROGRESS by a later arrival waits up to 1 s; docs/groups.md).
JoinGroup send times come from librdkafka's protocol debug log (its own timestamps), captured
from stderr while the group forms.

Commits, one client, one partition, explicit offsets:
  - "sync": confluent-kafka commit(asynchronous=False) in a loop: commits/s, p50/p99 latency;
  - "async": confluent-kafka commit(asynchronous=True), up to 1000 in flight (librdkafka sends
    one OffsetCommit per call and pipelines them on the coordinator connection): completions/s;
  - "raw wN": OffsetCommit v8 requests pipelined on one socket by a bare Python client (frames
    encoded once, offsets patched in), N in flight: commits/s and p50/p99 from send to answer.
    This shows the broker's own capacity, without librdkafka's or the consumer's costs, and
    how many in-flight commits one fsync round absorbs (group commit).
Before each broker a "disk now" line gives the fsync latency of a 100-byte append paced like a
commit loop: the floor of a synchronous commit's latency on gregor at that moment.

    python benchmarks/bench_groups.py --gregor-consumer [--records 200000]

gregor's own consumer in a group against the same consumer with assign(), on one gregor broker,
runs interleaved (assigned, group, assigned, group, ...): records/s from the first record to
the last (the group's join is reported apart), best of 5 runs each, and the ratio
group/assigned.

    python benchmarks/bench_groups.py --consumer-protocol [--members 10] [--rounds 3]

KIP-848 against the classic protocol on one gregor broker (confluent-kafka; heartbeat 0.5 s
both ways, group.initial.rebalance.delay.ms=0), runs alternating classic (range) and
`group.protocol=consumer` (uniform): seconds until every member holds its two partitions of
2 x members, from the first subscribe() ("formed"), and after one member closes until the
others hold every partition again ("after a leave"); best and worst of the rounds, and the
ratio of the medians consumer/classic.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import struct
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_broker import GregorBroker, TansuBroker, cpu_seconds  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


_RDKAFKA_LOG = re.compile(r"^%\d\|(\d+\.\d+)\|\w+\|(\S+)\|.*Sent JoinGroupRequest")


@contextlib.contextmanager
def stderr_to(path: str):
    """Point file descriptor 2 at path (librdkafka's threads write their log there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def rebalance(bootstrap: str, members: int) -> dict:
    """Seconds until every member is assigned: from the first subscribe(), from the last
    JoinGroup sent, from the first JoinGroup of the member that came last."""
    topic = f"rb-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, members * 2)
    with tempfile.NamedTemporaryFile(prefix="bench-groups-rdkafka-", suffix=".log") as logf:
        with stderr_to(logf.name):
            consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                                   "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                                   "debug": "protocol"})
                         for _ in range(members)]
            try:
                t0 = time.time()
                for c in consumers:
                    c.subscribe([topic])
                deadline = t0 + 120
                sizes: list[int] = []
                done = None
                while time.time() < deadline:
                    for c in consumers:
                        c.poll(0)
                    sizes = [len(c.assignment()) for c in consumers]
                    if all(sizes) and sum(sizes) == members * 2:
                        done = time.time()
                        break
                    time.sleep(0.0005)
            finally:
                for c in consumers:
                    c.close()
        if done is None:
            raise SystemExit(f"the group of {members} never formed: {sizes}")
        joins: dict[str, list[float]] = {}
        with open(logf.name, errors="replace") as f:
            for line in f:
                m = _RDKAFKA_LOG.match(line)
                if m and float(m.group(1)) <= done:
                    joins.setdefault(m.group(2), []).append(float(m.group(1)))
    if len(joins) != members:
        raise SystemExit(f"saw JoinGroup requests of {len(joins)} of {members} members")
    last_join = max(max(ts) for ts in joins.values())
    last_arrival = max(min(ts) for ts in joins.values())
    # librdkafka's log timestamps have millisecond resolution: never below 0
    return {"formed": done - t0, "last_join": max(0.0, done - last_join),
            "last_arrival": max(0.0, done - last_arrival),
            "joins": sum(len(ts) for ts in joins.values())}


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


def fsync_probe(directory: str | None = None, n: int = 1000) -> tuple[float, float]:
    """(p50, p99 ms) of fsync after a 100-byte append on this machine's disk, now, paced like
    a loop of synchronous commits: such a commit on gregor waits for one, so its p99 is
    bounded below by this (this VM's disk stalls ~4-5 ms on about 1% of them)."""
    lat = []
    with tempfile.NamedTemporaryFile(dir=directory, prefix="bench-groups-fsync-") as f:
        for _ in range(n):
            os.write(f.fileno(), b"x" * 100)
            t = time.perf_counter()
            os.fsync(f.fileno())
            lat.append(time.perf_counter() - t)
            time.sleep(0.0002)
    lat.sort()
    return lat[n // 2] * 1000, lat[int(n * 0.99)] * 1000


OFFSET_COMMIT_VERSION = 8


def raw_commit_rate(bootstrap: str, seconds: float,
                    window: int) -> tuple[float, float, float, int]:
    """OffsetCommit requests pipelined on one socket, `window` in flight: (commits/s, p50 ms,
    p99 ms from send to answer, commits sent in all, warm-up included). Every 101st answer's
    error code is checked."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gregor.protocol.header import decode_response, encode_request
    from gregor.protocol.messages import api
    oc = api(8)
    topic = f"or-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, 1)
    marker_offset, marker_corr = 0x5A5A5A5A5A5A5A5A, 0x7A7A7A7A
    frame = bytearray(encode_request(oc, OFFSET_COMMIT_VERSION, marker_corr, "bench", {
        "group_id": f"r-{topic}", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": marker_offset,
             "committed_leader_epoch": -1, "committed_metadata": ""}]}]}))
    at_offset = frame.index(struct.pack(">q", marker_offset))
    at_corr = frame.index(struct.pack(">i", marker_corr))
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent: deque[float] = deque()
    lat: list[float] = []
    buf = bytearray()
    n = 0

    def check(body: bytes) -> None:
        corr, resp = decode_response(oc, OFFSET_COMMIT_VERSION, body)
        code = resp["topics"][0]["partitions"][0]["error_code"]
        if code:
            raise SystemExit(f"OffsetCommit {corr} answered error {code}")
    try:
        for warm in (True, False):
            end = time.perf_counter() + (0.3 if warm else seconds)
            start = time.perf_counter()
            lat.clear()
            while True:
                now = time.perf_counter()
                if now < end and len(sent) < window:
                    out = []
                    while len(sent) < window:
                        n += 1
                        struct.pack_into(">i", frame, at_corr, n)
                        struct.pack_into(">q", frame, at_offset, n)
                        out.append(bytes(frame))
                        sent.append(now)
                    sock.sendall(b"".join(out))
                elif not sent:
                    break
                data = sock.recv(1 << 20)
                if not data:
                    raise SystemExit("the broker closed the connection")
                buf += data
                now = time.perf_counter()
                pos = 0
                while len(buf) - pos >= 4:
                    (size,) = struct.unpack_from(">i", buf, pos)
                    if len(buf) - pos - 4 < size:
                        break
                    if len(lat) % 101 == 0:
                        check(bytes(buf[pos + 4:pos + 4 + size]))
                    pos += 4 + size
                    lat.append(now - sent.popleft())
                del buf[:pos]
            elapsed = time.perf_counter() - start
    finally:
        sock.close()
    lat.sort()
    return len(lat) / elapsed, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000, n


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


def protocol_round(bootstrap: str, members: int, protocol: str) -> tuple[float, float]:
    topic = f"proto-{protocol}-{time.monotonic_ns()}"
    partitions = members * 2
    create_topic(bootstrap, topic, partitions)
    extra = {"group.protocol": "consumer"} if protocol == "consumer" else \
        {"session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", **extra})
                 for _ in range(members)]

    def settled(cs, each) -> bool:
        sets = [{tp.partition for tp in c.assignment()} for c in cs]
        return all(sets) and sum(len(x) for x in sets) == partitions and \
            len(set().union(*sets)) == partitions and (each is None or
                                                       all(len(x) == each for x in sets))

    def wait(cs, each) -> float:
        t0 = time.monotonic()
        while not settled(cs, each):
            for c in cs:
                c.poll(0.005)
            if time.monotonic() - t0 > 120:
                raise SystemExit(f"{protocol}: the group of {len(cs)} never settled")
        return time.monotonic() - t0
    try:
        for c in consumers:
            c.subscribe([topic])
        formed = wait(consumers, 2)
        consumers.pop(0).close()
        after = wait(consumers, None)
    finally:
        for c in consumers:
            c.close()
    return formed, after


def protocol_bench(members: int, rounds: int) -> None:
    b = GregorBroker({"group.initial.rebalance.delay.ms": 0,
                      "group.consumer.heartbeat.interval.ms": 500})
    b.start()
    try:
        create_topic(b.bootstrap, "warm-up", 1)     # creates __consumer_offsets on the way
        w = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "warm-up"})
        w.subscribe(["warm-up"])
        for _ in range(20):
            w.poll(0.05)
        w.close()
        got: dict[str, list] = {"classic": [], "consumer": []}
        for _ in range(rounds):
            for protocol in ("classic", "consumer"):
                got[protocol].append(protocol_round(b.bootstrap, members, protocol))
    finally:
        b.stop()
    med = {}
    for protocol, runs in got.items():
        formed = sorted(r[0] for r in runs)
        after = sorted(r[1] for r in runs)
        med[protocol] = (formed[len(formed) // 2], after[len(after) // 2])
        print(f"{protocol:8s} group of {members}: formed {formed[0]:.2f}-{formed[-1]:.2f} s, "
              f"after a leave {after[0]:.2f}-{after[-1]:.2f} s ({rounds} rounds)", flush=True)
    print(f"ratios consumer/classic (medians): formed "
          f"{med['consumer'][0] / med['classic'][0]:.2f}x, after a leave "
          f"{med['consumer'][1] / med['classic'][1]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--brokers", default="gregor,tansu")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                    help="also run the gregor broker of another source tree (e.g. before=/tmp/x)")
    ap.add_argument("--windows", default="1,16,256",
                    help="in-flight OffsetCommits of the raw pipelined client, comma-separated")
    ap.add_argument("--gregor-consumer", action="store_true",
                    help="compare gregor's consumer in a group with an assigned one instead")
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--consumer-protocol", action="store_true",
                    help="compare KIP-848 groups with classic ones on one gregor broker")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.consumer_protocol:
        protocol_bench(args.members, args.rounds)
        return
    if args.gregor_consumer:
        gregor_consumer_bench(args.records)
        return
    settings = {"group.initial.rebalance.delay.ms": 0}
    factories = {"gregor": lambda: GregorBroker(settings), "tansu": TansuBroker}
    for spec in args.tree:
        tname, path = spec.split("=", 1)
        factories[tname] = lambda path=path: GregorBroker(settings, tree=Path(path))
    names = args.brokers.split(",") + [spec.split("=", 1)[0] for spec in args.tree]
    windows = [int(w) for w in args.windows.split(",") if w]
    results = {}
    for name in names:
        f50, f99 = fsync_probe()
        print(f"disk now: fsync of a 100-byte append p50 {f50:.2f} ms p99 {f99:.2f} ms",
              flush=True)
        b = factories[name]()
        b.start()
        try:
            rb = rebalance(b.bootstrap, args.members)
            rate, p50, p99 = commit_rate(b.bootstrap, args.seconds)
            arate = async_commit_rate(b.bootstrap, args.seconds)
            raw, cpu = {}, {}
            for w in windows:
                before = cpu_seconds(b.proc.pid)
                raw[w] = raw_commit_rate(b.bootstrap, args.seconds, w)
                # the broker's CPU per commit: steadier than rates on a shared machine
                cpu[w] = (cpu_seconds(b.proc.pid) - before) / raw[w][3]
        finally:
            b.stop()
        results[name] = {"rb": rb, "sync": (rate, p50, p99), "async": arate, "raw": raw,
                         "cpu": cpu}
        print(f"{name:7s} group of {args.members}: formed in {rb['formed']:5.2f} s, "
              f"{rb['last_join'] * 1000:4.0f} ms after the last JoinGroup, "
              f"{rb['last_arrival']:5.2f} s after the last member's first JoinGroup "
              f"({rb['joins']} JoinGroups)", flush=True)
        print(f"{'':7s} OffsetCommit confluent-kafka sync {rate:6.0f}/s p50 {p50:5.2f} ms p99 "
              f"{p99:5.2f} ms | async {arate:6.0f}/s", flush=True)
        print(f"{'':7s} OffsetCommit raw pipelined " + ", ".join(
            f"w{w} {r[0]:6.0f}/s p50 {r[1]:6.2f} p99 {r[2]:6.2f} ms cpu {cpu[w] * 1e6:3.0f} us"
            for w, r in raw.items()), flush=True)
    if "tansu" in results:
        t = results["tansu"]
        for name, g in results.items():
            if name == "tansu":
                continue
            raw = ", ".join(f"w{w} {g['raw'][w][0] / t['raw'][w][0]:.2f}x (cpu/commit "
                            f"{g['cpu'][w] / t['cpu'][w]:.2f}x)"
                            for w in windows if w in t["raw"])
            print(f"ratios {name}/tansu: formed {g['rb']['formed'] / t['rb']['formed']:.2f}x, "
                  f"commits/s sync {g['sync'][0] / t['sync'][0]:.2f}x (p99 "
                  f"{g['sync'][2] / t['sync'][2]:.2f}x), async {g['async'] / t['async']:.2f}x, "
                  f"raw {raw}")


if __name__ == "__main__":
    main()
