"""Client quotas, side by side in one run: fairness under heavy producers, and what quota
bookkeeping costs when nothing is throttled.

    .venv/bin/python benchmarks/bench_quotas.py [--seconds 8] [--quota-mb 4] [--records 1000000]
                                                [--rounds 3]

1. fairness: a light client sends one small acks=1 Produce every 10 ms (100 requests/s, raw
   frames, one at a time) and records each round trip, while two heavy confluent-kafka
   producers (separate processes, flat out, 1 kB records) write another topic. Its p50 / p99
   are printed for: idle (no heavy producers); quotas off (both heavy ones unthrottled); one
   unthrottled and one quota'd (producer_byte_rate --quota-mb MB/s); and both quota'd; the
   scenarios take turns for --rounds rounds and the medians are printed (each round's p99 in
   brackets), p99 as a ratio to idle's (the target: within 2x with the heavy ones quota'd),
   with the heavy producers' MB/s.
2. overhead: confluent-kafka produce throughput (--records records of 100 bytes, acks=1) and
   fetch throughput (reading them back), with no quota configured (the broker does no quota
   work at all), with one large quota that applies to the benchmark's client (every request
   is measured, none throttled), and with 1,000 quota entities configured (the client's among
   them). Rounds alternate between the three set-ups, each round starting with another one;
   the median of --rounds is printed with the ratio to "none".
3. per-request cost, in process (no network, no broker: immune to the machine's noise): the
   time the server spends per Produce request on quota work, for the same four set-ups as 2
   plus "quotas elsewhere" (quotas exist, none applies to this client), against calling the
   handler directly (what a broker without quotas does), best of --rounds runs.

One broker process serves everything (a temporary data directory). Compare ratios within one
run: the machine is shared.
"""
from __future__ import annotations

import argparse
import itertools
import multiprocessing
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_broker import GregorBroker                     # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition   # noqa: E402

from gregor.client.admin import AdminClient, NewTopic    # noqa: E402
from gregor.protocol import messages                       # noqa: E402
from gregor.protocol.header import encode_request          # noqa: E402
from gregor.protocol.records.batch import encode_batch     # noqa: E402


# -- the light client ----------------------------------------------------------------------

def light_client(bootstrap: str, seconds: float) -> list[float]:
    """Round trips (seconds) of one small Produce every 10 ms."""
    host, port = bootstrap.rsplit(":", 1)
    api = messages.api("Produce")
    out = []
    with socket.create_connection((host, int(port))) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.monotonic()
        for corr in itertools.count(1):
            due = start + corr * 0.01
            if due - start > seconds:
                break
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            batch = encode_batch([(int(time.time() * 1000), None, b"ping", None)])
            frame = encode_request(api, 7, corr, "light", {
                "transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
                    {"name": "light", "partition_data": [{"index": 0, "records": batch}]}]})
            t0 = time.perf_counter()
            s.sendall(frame)
            size = struct.unpack(">i", _recv(s, 4))[0]
            _recv(s, size)
            out.append(time.perf_counter() - t0)
    return out


def _recv(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def _heavy(bootstrap: str, client_id: str, seconds: float, result) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                  "batch.size": 65536, "queue.buffering.max.kbytes": 8192, "acks": 1})
    value = b"h" * 1000
    acked = [0]

    def dr(err, msg):
        if err is None:
            acked[0] += 1
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            p.produce("heavy", value, on_delivery=dr)
        except BufferError:
            p.poll(0.005)
        p.poll(0)
    p.flush(60)
    result.value = acked[0] * len(value) / (time.monotonic() - t0) / 1e6


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fairness(bootstrap: str, seconds: float, quota_mb: float, rounds: int) -> None:
    quota = int(quota_mb * 1e6)
    scenarios = [("idle", None), ("quotas off", (None, None)),
                 ("one quota'd, one not", (None, quota)), ("both quota'd", (quota, quota))]
    print(f"1. fairness: light client, 100 small produce requests/s, {seconds:.0f} s a run, "
          f"{rounds} rounds (medians); heavy producers flat out (quota {quota_mb:g} MB/s "
          "where set)")
    runs: dict[str, list] = {name: [] for name, _ in scenarios}
    for _ in range(rounds):
        for name, quotas in scenarios:
            with AdminClient({"bootstrap.servers": bootstrap}) as admin:
                admin.alter_client_quotas([
                    ({"client-id": f"heavy-{i}"}, {"producer_byte_rate": q})
                    for i, q in enumerate(quotas or (None, None))])
            procs, results = [], []
            if quotas is not None:
                for i in range(2):
                    r = multiprocessing.Value("d", 0.0)
                    p = multiprocessing.Process(target=_heavy, args=(bootstrap, f"heavy-{i}",
                                                                      seconds + 2, r))
                    p.start()
                    procs.append(p)
                    results.append(r)
                time.sleep(1.5)        # let them reach full speed (and spend their credit)
            rtts = light_client(bootstrap, seconds)
            for p in procs:
                p.join()
            runs[name].append((pct(rtts, 0.50) * 1000, pct(rtts, 0.99) * 1000,
                               [r.value for r in results]))
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_client_quotas([({"client-id": f"heavy-{i}"}, {"producer_byte_rate": None})
                                   for i in range(2)])
    idle_p99 = statistics.median(r[1] for r in runs["idle"])
    for name, _ in scenarios:
        p50 = statistics.median(r[0] for r in runs[name])
        p99 = statistics.median(r[1] for r in runs[name])
        heavy = ", ".join(f"{statistics.median(r[2][i] for r in runs[name]):.1f}"
                          for i in range(len(runs[name][0][2]))) or "-"
        spread = "/".join(f"{r[1]:.1f}" for r in runs[name])
        print(f"   {name:22s} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms ({spread})  p99/idle "
              f"{p99 / idle_p99:5.2f}x   heavy MB/s: {heavy}")


# -- overhead without throttling ----------------------------------------------------------

def produce_run(bootstrap: str, topic: str, records: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "bench", "linger.ms": 5,
                  "acks": 1})
    value = b"v" * 100
    t0 = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
    p.flush(120)
    return records * 100 / (time.perf_counter() - t0) / 1e6


def fetch_run(bootstrap: str, topic: str, records: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "bench", "group.id": "bench",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, 0)])
    seen, t0, first = 0, None, 0
    while seen < records:
        batch = sum(1 for m in c.consume(10000, 1.0) if not m.error())
        if batch and t0 is None:
            t0, first = time.perf_counter(), batch   # timed from the first records on
        seen += batch
    elapsed = time.perf_counter() - t0
    c.close()
    return (seen - first) * 100 / elapsed / 1e6


def overhead(bootstrap: str, records: int, rounds: int) -> None:
    big = 1e12
    many = [({"client-id": f"app-{i}"}, {"producer_byte_rate": big, "consumer_byte_rate": big})
            for i in range(999)]
    setups = {
        "none": [({"client-id": "bench"}, {"producer_byte_rate": None,
                                           "consumer_byte_rate": None})]
        + [(e, {k: None for k in ops}) for e, ops in many],
        "one large quota": [({"client-id": "bench"}, {"producer_byte_rate": big,
                                                      "consumer_byte_rate": big})],
        "1,000 entities": many + [({"client-id": "bench"}, {"producer_byte_rate": big,
                                                            "consumer_byte_rate": big})],
    }
    order = ["none", "one large quota", "1,000 entities"]
    produced = {k: [] for k in order}
    fetched = {k: [] for k in order}
    print(f"2. overhead: {records} records of 100 bytes, produce then fetch, {rounds} rounds")
    n = 0
    for r in range(rounds):
        for name in order[r % 3:] + order[:r % 3]:      # each set-up takes every position
            with AdminClient({"bootstrap.servers": bootstrap}) as admin:
                admin.alter_client_quotas(setups["none"])       # from a clean slate
                admin.alter_client_quotas(setups[name])
                if name == "none":
                    assert not admin.describe_client_quotas()
                topic = f"overhead-{n}"
                n += 1
                admin.create_topics([NewTopic(topic, 1)])
            produced[name].append(produce_run(bootstrap, topic, records))
            fetched[name].append(fetch_run(bootstrap, topic, records))
    base_p, base_f = statistics.median(produced["none"]), statistics.median(fetched["none"])
    for name in order:
        p, f = statistics.median(produced[name]), statistics.median(fetched[name])
        print(f"   {name:16s} produce {p:6.1f} MB/s ({p / base_p:4.2f}x)   "
              f"fetch {f:6.1f} MB/s ({f / base_f:4.2f}x)")


# -- per-request cost in process -------------------------------------------------------------

class _Conn:
    from gregor.broker.security.principal import ANONYMOUS as principal
    closed = False
    client_host = "127.0.0.1"

    def throttle(self, ms):
        pass


def per_request_cost(rounds: int, n: int = 200_000) -> None:
    import asyncio
    import tempfile
    from gregor.broker.config import BrokerConfig
    from gregor.broker.entity_configs.file_store import FileEntityConfigStore
    from gregor.broker.quotas.service import QuotaService
    from gregor.broker.server import Handler, RequestContext
    from gregor.protocol.header import RequestHeader

    api = messages.api("Produce")
    response = {"throttle_time_ms": 0, "responses": []}
    handler = Handler(api, 0, 9, lambda ctx, body: response)
    body = {"acks": 1}
    ctx = RequestContext(_Conn(), api, RequestHeader(0, 7, 1, "bench"), 0.0)
    big = "1000000000000"

    async def setups():
        store = FileEntityConfigStore(tempfile.mkdtemp(prefix="bench-quotas-")).load()
        service = QuotaService(BrokerConfig({}))

        class Server:
            quotas = None
        service.start(store, Server)
        out = {"none (handler called directly)": None}
        await store.alter("clients/other", {"producer_byte_rate": big})
        out["quotas elsewhere"] = service.enforcer
        yield out
        await store.alter("clients/bench", {"producer_byte_rate": big})
        yield {"one large quota": service.enforcer}
        for i in range(999):
            await store.alter(f"clients/app-{i}", {"producer_byte_rate": big})
        yield {"1,000 entities": service.enforcer}
        service.close()

    def timed(enforcer) -> float:
        t0 = time.perf_counter()
        if enforcer is None:
            for _ in range(n):
                handler.handle(ctx, body)
        else:
            for _ in range(n):
                enforcer.handle(handler, ctx, body, 120)
        return (time.perf_counter() - t0) / n * 1e9

    async def run():
        results = {}
        async for group in setups():
            for name, enforcer in group.items():
                results[name] = min(timed(enforcer) for _ in range(rounds))
        return results
    results = asyncio.run(run())
    base = results.pop("none (handler called directly)")
    print(f"3. per-request cost in process ({n} Produce requests per run, best of {rounds})")
    print(f"   {'none (handler called directly)':32s} {base:7.0f} ns")
    for name, ns in results.items():
        print(f"   {name:32s} {ns:7.0f} ns  (+{ns - base:.0f} ns a request)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--quota-mb", type=float, default=4.0)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    broker = GregorBroker().start()
    try:
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
            admin.create_topics([NewTopic("light", 1), NewTopic("heavy", 2)])
        fairness(broker.bootstrap, args.seconds, args.quota_mb, args.rounds)
        overhead(broker.bootstrap, args.records, args.rounds)
    finally:
        broker.stop()
    per_request_cost(args.rounds)


if __name__ == "__main__":
    main()
