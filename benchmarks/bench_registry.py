"""The Schema Registry's costs: lookup by id, registering many subjects, memory per schema,
restart to serving; printed, with the in-memory lookup beside the HTTP one.

    .venv/bin/python benchmarks/bench_registry.py [--subjects 10000] [--lookups 20000]

One in-process gregor broker and one registry on it (gregor.testing.Broker(schema_registry=
True) would do the same; here the registry runs on its own loop, as `gregor registry`).
- register: --subjects distinct Avro schemas, one subject each, POSTed in sequence over one
  keep-alive connection (each write is produced with acks=all and read back before the
  answer, as Confluent's registry does);
- lookup by id: GET /schemas/ids/{id} of random ids over one keep-alive connection, p50 /
  p99 / max, beside the lookup in memory (dict get + the JSON answer) the route runs;
- memory per 10,000 schemas: tracemalloc's count of what a RegistryState holds after
  applying every record of `_schemas` (the state alone, the parse cache left out);
- restart to serving: a new registry on the same topic, from start() to its first answer.
"""
from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gregor.client.consumer import Consumer  # noqa: E402
from gregor.registry.server import RegistryThread  # noqa: E402
from gregor.registry.state import RegistryState  # noqa: E402
from gregor.testing import Broker  # noqa: E402

V1 = "application/vnd.schemaregistry.v1+json"
HEADERS = {"Accept": V1, "Content-Type": V1}


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": f"Rec{i}", "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"},
                                  {"name": "name", "type": "string"},
                                  {"name": f"f{i % 7}", "type": ["null", "double"],
                                   "default": None}]})


def connect(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)


def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers=HEADERS)
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
    return data


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, default=10_000)
    ap.add_argument("--lookups", type=int, default=20_000)
    args = ap.parse_args()
    with Broker() as broker:
        cfg = {"bootstrap.servers": broker.bootstrap_servers}
        with RegistryThread(cfg) as reg:
            conn = connect(reg.url)
            ids = []
            t0 = time.perf_counter()
            for i in range(args.subjects):
                body = json.dumps({"schema": schema(i)}).encode()
                ids.append(json.loads(call(conn, "POST", f"/subjects/bench-{i}-value/versions",
                                           body))["id"])
            reg_s = time.perf_counter() - t0
            print(f"register {args.subjects} subjects over HTTP: {reg_s:.1f} s "
                  f"({args.subjects / reg_s:.0f}/s, {reg_s / args.subjects * 1e3:.2f} ms each)")
            rng = random.Random(7)
            lat = []
            for _ in range(args.lookups):
                sid = rng.choice(ids)
                t = time.perf_counter()
                call(conn, "GET", f"/schemas/ids/{sid}")
                lat.append(time.perf_counter() - t)
            state = reg.registry.store.state
            routes = reg.registry.app.routes
            mem = []
            for _ in range(args.lookups):
                sid = rng.choice(ids)
                t = time.perf_counter()
                json.dumps(routes.schema_by_id(None, str(sid)), separators=(",", ":"))
                mem.append(time.perf_counter() - t)
            us = [x * 1e6 for x in lat]
            mus = [x * 1e6 for x in mem]
            print(f"lookup by id over HTTP ({args.lookups}): p50 {pct(us, .5):.0f} us, "
                  f"p99 {pct(us, .99):.0f} us, max {max(us):.0f} us")
            print(f"lookup by id in memory (the route alone): p50 {pct(mus, .5):.1f} us, "
                  f"p99 {pct(mus, .99):.1f} us; HTTP/memory at p50 "
                  f"{pct(us, .5) / pct(mus, .5):.0f}x")
            n_records = state.offset + 1
        # memory: the state rebuilt from the topic's records, sans I/O
        c = Consumer(cfg)
        c.assign([("_schemas", 0, -2)])
        recs = []
        while len(recs) < n_records:
            recs += [(r.key, r.value, r.offset) for r in c.poll(1.0)]
        c.close()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        st = RegistryState()
        for k, v, o in recs:
            st.apply(k, v, o)
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        held = sum(s.size_diff for s in after.compare_to(before, "filename"))
        per = held / max(st.schema_count(), 1)
        print(f"memory: {held / 2**20:.1f} MiB for {st.schema_count()} schemas "
              f"({per:.0f} B each, {per * 10_000 / 2**20:.1f} MiB per 10,000; schema text "
              f"{statistics.mean(len(schema(i)) for i in range(100)):.0f} B)")
        # restart to serving
        t0 = time.perf_counter()
        with RegistryThread(cfg) as reg2:
            call(connect(reg2.url), "GET", f"/schemas/ids/{ids[-1]}")
            restart_s = time.perf_counter() - t0
        print(f"restart to serving with {len(ids)} schemas ({n_records} records): "
              f"{restart_s:.2f} s")


if __name__ == "__main__":
    main()
