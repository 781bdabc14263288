"""The broker's network layer alone: CPU per large produce request received, framed and decoded.

    .venv/bin/python benchmarks/bench_broker_receive.py [--requests 300] [--rounds 5]
        [--partitions 1,6] [--loops uvloop,asyncio] [--tree before=/tmp/gregor-before]

A gregor `Server` (gregor/broker/server.py) runs in a process of its own with a Produce
handler that does nothing, so what is measured is reading the bytes, cutting frames and
decoding the request (records stay views). A client process sends the same pre-encoded
Produce v8 request (one ~1 MiB batch per partition, as bench_broker_cpu.py's raw loads) with 4
in flight. The server's CPU (utime + stime) per request is printed, best and median over the
rounds; with --tree, the same server from other source trees (e.g. `git archive <commit> | tar
-x -C DIR`) runs in alternation, and the ratios compare this tree with them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def serve(loop_name: str, partitions: int, requests: int) -> None:
    """Server side (runs with PYTHONPATH at the tree under test); prints us of CPU/request."""
    import asyncio
    import resource

    from gregor.broker.metrics import BrokerMetrics
    from gregor.broker.server import Handler, Server
    from gregor.protocol import messages

    produce = messages.api("Produce")

    async def main():
        srv = Server({0: Handler(produce, 3, 8, lambda ctx, req: {"responses": []})},
                     BrokerMetrics(), max_request_bytes=100 << 20, max_connections=10,
                     max_in_flight=100, idle_timeout_s=600)
        _, port = await srv.start("127.0.0.1", 0)
        client = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "client", str(port), str(partitions), str(requests),
            stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(REPO)))
        await client.stdout.readline()                 # warmed up
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        await client.stdout.readline()                 # done
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        await client.wait()
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        print(f"{cpu / requests * 1e6:.1f}")
        srv.stop_accepting()
        await srv.close()

    if loop_name == "uvloop":
        import uvloop
        uvloop.run(main())
    else:
        asyncio.run(main())


def client(port: int, partitions: int, requests: int) -> None:
    import socket

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_broker_cpu import produce_frame, send_pipelined

    frame = produce_frame("t", partitions, 1)
    s = socket.create_connection(("127.0.0.1", port))

    def run(count):
        send_pipelined(s, frame, count)

    run(20)
    print("ready", flush=True)
    run(requests)
    print("done", flush=True)


def measure(tree: Path, loop_name: str, partitions: int, requests: int) -> float:
    out = subprocess.run([sys.executable, __file__, "serve", loop_name, str(partitions),
                          str(requests)], env=dict(os.environ, PYTHONPATH=str(tree)),
                         capture_output=True, text=True, check=True, timeout=600)
    return float(out.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--partitions", default="1,6")
    ap.add_argument("--loops", default="uvloop,asyncio")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_broker_cpu import IN_FLIGHT   # the client's (send_pipelined's) pipelining
    trees = {"this": REPO} | {n: Path(d).resolve() for n, d in
                              (t.split("=", 1) for t in args.tree)}
    print(f"server CPU per Produce request received and decoded (us; best / median of "
          f"{args.rounds} rounds of {args.requests} requests, {IN_FLIGHT} in flight)")
    for loop_name in args.loops.split(","):
        for parts in (int(p) for p in args.partitions.split(",")):
            requests = max(20, args.requests // parts)
            runs = {name: [] for name in trees}
            for _ in range(args.rounds):              # alternate the trees within each round
                for name, tree in trees.items():
                    runs[name].append(measure(tree, loop_name, parts, requests))
            line = [f"  {loop_name:8s} {parts} x 1 MiB"]
            for name, r in runs.items():
                line.append(f"{name} {min(r):6.0f} / {statistics.median(r):6.0f}")
            for name in trees:
                if name != "this":
                    line.append(f"this/{name} {min(runs['this']) / min(runs[name]):4.2f}x")
            print("   ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "client":
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
