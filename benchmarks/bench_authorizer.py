"""What the authorizer costs: produce and fetch throughput with the ACL authorizer on (1,000
ACLs) vs off, side by side in one run, with confluent-kafka (librdkafka) as the client.

    .venv/bin/python benchmarks/bench_authorizer.py [--records 300000] [--acls 1000]
                                                    [--repeat 3]

Two gregor brokers run for the whole benchmark, one without an authorizer and one with
authorizer.class.name set and --acls ACLs in its data directory (written before it starts:
literal and prefixed ACLs on other topics and groups for other principals, plus the few that
let this client - User:ANONYMOUS over PLAINTEXT - write, read and create). Rounds alternate
between the two; the best round of each is reported with the ratio on/off (target >= 0.95)
and the broker process's CPU seconds (steadier than wall-clock rates on a shared machine).

It also times the decision itself in process: a cached decision (the hot path: the same
principal, host, operation and topic as the previous request) and an uncached one over the
same 1,000 ACLs.
"""
from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_broker import (KEY_BYTES, UNPACED, VALUE_BYTES, GregorBroker,  # noqa: E402
                          create_topic, fetch_throughput, measured, rates)
from confluent_kafka import Producer  # noqa: E402

from gregor.protocol.acl import (AccessControlEntry, AclOperation as Op,  # noqa: E402
                                 AclPermissionType as Perm, PatternType,
                                 ResourcePattern, ResourceType as RT)
from gregor.broker.security.acl_store import FileAclStore  # noqa: E402
from gregor.broker.security.authorizer import AclAuthorizer  # noqa: E402
from gregor.broker.security.principal import ANONYMOUS  # noqa: E402

AUTHZ = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}


def acl_set(count: int) -> dict:
    """count ACLs: the client's few (WRITE/READ on the bench topics' prefix, CREATE on the
    cluster, READ on its groups) and filler on other resources and principals, a third of
    them prefixed, so every lookup walks realistic tables."""
    acls: dict = {}

    def add(rtype, name, pattern, principal, op, perm=Perm.ALLOW, host="*"):
        p = ResourcePattern(rtype, name, pattern)
        acls.setdefault(p, set()).add(AccessControlEntry(principal, host, op, perm))
    add(RT.TOPIC, "bench-", PatternType.PREFIXED, str(ANONYMOUS), Op.WRITE)
    add(RT.TOPIC, "bench-", PatternType.PREFIXED, str(ANONYMOUS), Op.READ)
    add(RT.CLUSTER, "kafka-cluster", PatternType.LITERAL, str(ANONYMOUS), Op.CREATE)
    add(RT.GROUP, "bench", PatternType.PREFIXED, str(ANONYMOUS), Op.READ)
    i = 0
    while sum(len(v) for v in acls.values()) < count:
        pattern = PatternType.PREFIXED if i % 3 == 0 else PatternType.LITERAL
        rtype = RT.TOPIC if i % 4 else RT.GROUP
        add(rtype, f"svc{i % 97}-data-{i}", pattern, f"User:app{i % 50}",
            (Op.READ, Op.WRITE, Op.DESCRIBE)[i % 3], Perm.DENY if i % 11 == 0 else Perm.ALLOW,
            host="*" if i % 5 else f"10.1.{i % 250}.{i % 200}")
        i += 1
    return {p: frozenset(e) for p, e in acls.items()}


# Authorization is per request, not per record: small requests (16 KiB produce batches,
# 64 KiB fetches per partition) show its cost at its largest share.
SHAPES = {
    "default": ({}, UNPACED),
    "small requests": ({"linger.ms": 0, "batch.size": 16384},
                       {**UNPACED, "max.partition.fetch.bytes": 65536, "fetch.max.bytes": 65536,
                        "message.max.bytes": 65536}),
}


def produce(bootstrap: str, topic: str, records: int, extra: dict) -> dict:
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "enable.idempotence": False, "delivery.report.only.error": True,
                  "queue.buffering.max.messages": 500_000,
                  "on_delivery": lambda err, msg: errors.append(err), **extra})
    value, key = b"v" * VALUE_BYTES, b"k" * KEY_BYTES
    t0 = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value, key, 0)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    if left or errors:
        raise SystemExit(f"{left} undelivered, {len(errors)} delivery errors: {errors[:3]}")
    return rates(records, dt)


class _Conn:
    """What a request context reads from its connection: a PLAINTEXT client."""
    principal, client_host, listener, peer = ANONYMOUS, "127.0.0.1", "PLAINTEXT", "127.0.0.1:1"
    authz_memo = None


def handler_cost(acls: dict, requests: int = 5_000, rounds: int = 7) -> dict:
    """Microseconds per Produce (acks=1, one 10-record batch) and per Fetch (one partition,
    64 KiB) through the handlers in process, without and with the authorizer, alternating,
    the least of `rounds`: the broker's own per-request cost, free of client and network."""
    import asyncio
    import tempfile
    from gregor.broker import apis
    from gregor.broker.broker import Broker
    from gregor.broker.config import BrokerConfig
    from gregor.broker.server import RequestContext
    from gregor.protocol import messages
    from gregor.protocol.header import RequestHeader, decode_request, encode_request
    from gregor.protocol.records.batch import encode_batch

    records = encode_batch([(0, b"k", b"v" * VALUE_BYTES, [])] * 10)
    bodies = {
        "Produce": (8, {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "bench-h", "partition_data": [{"index": 0, "records": records}]}]}),
        "Fetch": (11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                       "max_bytes": 1 << 16, "session_epoch": -1, "topics": [
                           {"topic": "bench-h", "partitions": [
                               {"partition": 0, "fetch_offset": 0,
                                "partition_max_bytes": 1 << 16}]}]}),
    }

    def open_broker(settings: dict):
        b = Broker(BrokerConfig({"log.dirs": tempfile.mkdtemp(prefix="bench-authz-"),
                                 "gregor.fsync.acks.all": False, **settings}))
        b.open()
        if b.authorizer is not None:
            b.authorizer.replace_all(acls)
        b.handlers = apis.build_handlers(b)
        b.create_topic("bench-h", 1, {})
        calls = {}
        for name, (version, body) in bodies.items():
            api = messages.api(name)
            frame = encode_request(api, version, 1, "bench", body)
            request = decode_request(api, memoryview(frame)[4:], view_records=True)[1]
            ctx = RequestContext(_Conn(), api, RequestHeader(api.key, version, 1, "b"), 0.0)
            calls[name] = (b.handlers[api.key].handle, ctx, request)
        return b, calls

    async def run() -> dict:
        brokers = {"off": open_broker({}), "on": open_broker(AUTHZ)}
        best = {}
        for _ in range(rounds):
            for which, (_, calls) in brokers.items():
                for name, (handle, ctx, request) in calls.items():
                    t0 = time.perf_counter()
                    for _ in range(requests):
                        handle(ctx, request)
                    us = (time.perf_counter() - t0) / requests * 1e6
                    best[(which, name)] = min(us, best.get((which, name), us))
        for b, _ in brokers.values():
            await b.shutdown()
        return best
    return asyncio.run(run())


def decision_cost(acls: dict, calls: int = 200_000) -> tuple[float, float]:
    """(ns per cached decision, ns per uncached decision)."""
    a = AclAuthorizer()
    a.replace_all(acls)
    t0 = time.perf_counter()
    for _ in range(calls):
        a.authorize(ANONYMOUS, "127.0.0.1", Op.WRITE, RT.TOPIC, "bench-x")
    cached = (time.perf_counter() - t0) / calls * 1e9
    n = calls // 10
    t0 = time.perf_counter()
    for i in range(n):
        a._cache.clear()
        a.authorize(ANONYMOUS, "127.0.0.1", Op.WRITE, RT.TOPIC, "bench-x")
    uncached = (time.perf_counter() - t0) / n * 1e9
    return cached, uncached


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--acls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    acls = acl_set(args.acls)
    cached, uncached = decision_cost(acls)
    print(f"decision over {sum(len(v) for v in acls.values())} ACLs: {cached:.0f} ns cached, "
          f"{uncached:.0f} ns uncached (per call, in process)")
    cost = handler_cost(acls)
    for name in ("Produce", "Fetch"):
        off_us, on_us = cost[("off", name)], cost[("on", name)]
        print(f"{name} handler in process: off {off_us:.1f} us, on {on_us:.1f} us per request "
              f"(ratio of requests/s on/off {off_us / on_us:.3f})")

    off = GregorBroker()
    on = GregorBroker(AUTHZ)
    store = FileAclStore(Path(on.dir) / "data")
    store.modify_now({p: (lambda cur, e=e: e) for p, e in acls.items()})
    brokers = [off.start(), on.start()]
    best: dict = {}
    try:
        for r in range(args.repeat):
            for shape, (p_extra, f_extra) in SHAPES.items():
                for b in brokers:
                    topic = f"bench-{uuid.uuid4().hex[:8]}"
                    create_topic(b.bootstrap, topic)
                    prod = measured(b.proc.pid, produce, b.bootstrap, topic, args.records,
                                    p_extra)
                    fetch = measured(b.proc.pid, fetch_throughput, b.bootstrap, topic,
                                     args.records, f_extra)
                    name = "on" if b is on else "off"
                    print(f"round {r + 1} {shape:14} authorizer {name:3}: produce "
                          f"{prod['msgs_s']:>9,.0f} msg/s (broker CPU "
                          f"{prod['broker_cpu_s']:.2f} s), fetch {fetch['msgs_s']:>9,.0f} msg/s "
                          f"(broker CPU {fetch['broker_cpu_s']:.2f} s)", flush=True)
                    for what, res in (("produce", prod), ("fetch", fetch)):
                        key = (shape, name, what)
                        if key not in best or res["msgs_s"] > best[key]["msgs_s"]:
                            best[key] = res
                        cpu = best.setdefault((shape, name, what, "cpu"), [])
                        cpu.append(res["broker_cpu_s"])
    finally:
        for b in brokers:
            b.stop()
    print(f"\nbest of {args.repeat} rounds, {args.records:,} records of 110 bytes, "
          f"{sum(len(v) for v in acls.values())} ACLs (broker CPU: the least of the rounds):")
    for shape in SHAPES:
        for what in ("produce", "fetch"):
            o, n = best[(shape, "off", what)], best[(shape, "on", what)]
            oc = min(best[(shape, "off", what, "cpu")])
            nc = min(best[(shape, "on", what, "cpu")])
            print(f"  {shape:14} {what:7}: off {o['msgs_s']:>10,.0f} msg/s   on "
                  f"{n['msgs_s']:>10,.0f} msg/s   ratio on/off "
                  f"{n['msgs_s'] / o['msgs_s']:.3f}   broker CPU off {oc:.2f} s on {nc:.2f} s")


if __name__ == "__main__":
    main()
