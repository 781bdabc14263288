"""Broker CPU per produced record: gregor vs tansu, and gregor's produce path before/after.

    .venv/bin/python benchmarks/bench_broker_cpu.py [--records 2000000] [--rounds 3]
        [--brokers gregor,tansu] [--loads raw-1p,raw-6p,...] [--no-micro]
        [--tree before=/tmp/gregor-before]

Loads (each on a fresh topic; large produce requests as issue 4's send_batch makes them):
- raw-1p / raw-6p / raw-1p-acks-all: one pre-encoded Produce v8 request, sent again and again
  (4 in flight) by a client that costs next to nothing: one uncompressed 1 MiB batch of 8,700
  records (10 B keys, 100 B values) per partition per request, acks=1 (or acks=all). This is
  the broker's own cost, without the client's CPU competing on this 2-core machine.
  raw-1p-lz4: the same records in an lz4 batch (as the Spark sink sends them): the broker
  decompresses each batch to check its records. raw-1p-lz4-java: the same, the lz4 frame
  written as Kafka's Java producer writes it (no content size in its header).
- send_batch-1p / send_batch-6p: gregor's Producer.send_batch (chunks of 50,000 records,
  acks=1, linger 5 ms) as benchmarks/bench_producer.py runs it; the client shares the CPU.

Brokers: gregor (persisting to a temporary directory, with its fsync group commit), tansu
(in-memory storage, Rust), and with --tree, gregor brokers from other source trees (an older
commit, for a before/after in one run). Broker CPU is utime + stime of the broker process (all
its threads) from /proc/<pid>/stat, per record; the best and the median of the rounds are
printed, then ratios. Each broker first takes 50 requests unmeasured (gregor loads its
compiled record walk at the first large batch). Rounds alternate between the brokers; compare
ratios within one run (the machine is shared and noisy).

The micro section times the produce-path pieces in this process, old beside new, on the same
~1 MiB batch (same-size records, then mixed sizes): the record-length chain (plain loop vs
run-skipping), the structure walk (general numpy walk vs the same-layout proof), and the whole
validation (copying the records section and walking it the old way vs validate_batch now,
with the numpy paths only and with the compiled walk).
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_producer import Latency, create_topic, make_data, run_gregor_send_batch  # noqa: E402

from gregor.protocol import messages  # noqa: E402
from gregor.protocol.compression import LZ4, NONE  # noqa: E402
from gregor.protocol.header import decode_response, encode_request  # noqa: E402
from gregor.protocol.records.batch import encode_batch  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PRODUCE = messages.api("Produce")
RECORDS_PER_BATCH = 8_700      # 10 B keys + 100 B values: just under 1 MiB, max.message.bytes
IN_FLIGHT = 4                  # pipelined requests, like a producer's max.in.flight


def broker_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS      # utime + stime


# -- brokers ---------------------------------------------------------------------------------

class _BrokerUnderTest:
    """A broker process: start(), bootstrap, pid, stop()."""

    def start(self):
        self.proc.start()
        return self

    @property
    def bootstrap(self):
        return self.proc.bootstrap

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        self.proc.stop()


class Gregor(_BrokerUnderTest):
    def __init__(self, name, settings):
        self.name = name
        self.tmp = tempfile.TemporaryDirectory(prefix=f"bench-{name}-")
        self.proc = BrokerProcess(Path(self.tmp.name) / "data", settings=settings)

    def stop(self):
        super().stop()
        self.tmp.cleanup()


class GregorTree:
    """A gregor broker from another source tree (e.g. `git archive <commit> | tar -x -C DIR`),
    for a before/after in one run."""

    def __init__(self, name, tree):
        self.name = name
        self.tree = Path(tree).resolve()
        self.tmp = tempfile.TemporaryDirectory(prefix=f"bench-{name}-")
        self.popen = None
        self.bootstrap = None

    def start(self):
        import re
        import subprocess
        import threading
        env = dict(os.environ, PYTHONPATH=str(self.tree), PYTHONUNBUFFERED="1")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
             "--data-dir", str(Path(self.tmp.name) / "data")], cwd=self.tree, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True)
        for line in self.popen.stdout:
            m = re.search(r"gregor broker ready on (\S+):(\d+)", line)
            if m:
                self.bootstrap = f"{m.group(1)}:{m.group(2)}"
                break
        if self.bootstrap is None:
            self.stop()
            raise RuntimeError(f"the broker from {self.tree} did not start")
        threading.Thread(target=lambda: [None for _ in self.popen.stdout], daemon=True).start()
        return self

    @property
    def pid(self):
        return self.popen.pid

    def stop(self):
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(30)
        self.tmp.cleanup()


class Tansu(_BrokerUnderTest):
    name = "tansu"

    def __init__(self):
        from tests.interop.targets import TansuProcess
        self.proc = TansuProcess()


BROKERS = {
    "gregor": lambda: Gregor("gregor", {}),
    "tansu": Tansu,
}


# -- loads -----------------------------------------------------------------------------------

def produce_frame(topic: str, partitions: int, acks: int, compression: int = NONE,
                  sizeless_lz4: bool = False) -> bytes:
    now = int(time.time() * 1000)
    # values differ (as a sink's rows do) so an lz4 batch is not one long run
    batch = encode_batch([(now, b"%010d" % i, b"%020d" % i + b"v" * 80)
                          for i in range(RECORDS_PER_BATCH)], compression=compression)
    if sizeless_lz4:
        batch = java_lz4(encode_batch([(now, b"%010d" % i, b"%020d" % i + b"v" * 80)
                                       for i in range(RECORDS_PER_BATCH)]))
    request = {"transactional_id": None, "acks": acks, "timeout_ms": 30_000,
               "topic_data": [{"name": topic, "partition_data": [
                   {"index": p, "records": batch} for p in range(partitions)]}]}
    return encode_request(PRODUCE, 8, 1, "bench-raw", request)


def java_lz4(batch: bytes) -> bytes:
    """An uncompressed v2 batch recompressed as Kafka's Java producer writes lz4: 64 KiB
    independent blocks, no content size, no checksums (attributes, length and CRC redone)."""
    import crc32c
    import lz4.frame
    payload = lz4.frame.compress(batch[61:], block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                 block_linked=False, store_size=False, content_checksum=False)
    out = bytearray(batch[:61] + payload)
    struct.pack_into(">i", out, 8, 49 + len(payload))
    struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | LZ4)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def send_pipelined(sock, frame: bytes, count: int, on_response=None) -> None:
    """Send frame `count` times with up to IN_FLIGHT unanswered; on_response(body) for each
    response frame (body without its size prefix), in order."""
    sent = done = 0
    buf = bytearray()
    while done < count:
        while sent < count and sent - done < IN_FLIGHT:
            sock.sendall(frame)
            sent += 1
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        buf += chunk
        while len(buf) >= 4:
            size = struct.unpack_from(">i", buf)[0]
            if len(buf) < 4 + size:
                break
            if on_response is not None:
                on_response(bytes(buf[4:4 + size]))
            del buf[:4 + size]
            done += 1


def _check_produce(response: bytes) -> None:
    _, body = decode_response(PRODUCE, 8, response)
    for t in body["responses"]:
        for p in t["partition_responses"]:
            if p["error_code"]:
                raise RuntimeError(f"produce to {t['name']}-{p['index']} failed: "
                                   f"error {p['error_code']} {p['error_message']}")


def raw_load(bootstrap: str, topic: str, partitions: int, records: int, acks: int,
             compression: int = NONE, sizeless_lz4: bool = False) -> int:
    """Send the same request until `records` records are acknowledged; returns the count."""
    frame = produce_frame(topic, partitions, acks, compression, sizeless_lz4)
    per_request = RECORDS_PER_BATCH * partitions
    requests = -(-records // per_request)
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as s:
        send_pipelined(s, frame, requests, _check_produce)
    return requests * per_request


def send_batch_load(bootstrap: str, topic: str, partitions: int, records: int, _acks) -> int:
    keys, value = make_data(records)
    run_gregor_send_batch(bootstrap, topic, keys, value, Latency())
    return records


def raw_lz4_load(bootstrap: str, topic: str, partitions: int, records: int, acks: int) -> int:
    return raw_load(bootstrap, topic, partitions, records, acks, LZ4)


def raw_java_lz4_load(bootstrap: str, topic: str, partitions: int, records: int,
                      acks: int) -> int:
    return raw_load(bootstrap, topic, partitions, records, acks, LZ4, sizeless_lz4=True)


LOADS = {
    "raw-1p": (raw_load, 1, 1),
    "raw-1p-lz4": (raw_lz4_load, 1, 1),
    "raw-1p-lz4-java": (raw_java_lz4_load, 1, 1),
    "raw-6p": (raw_load, 6, 1),
    "raw-1p-acks-all": (raw_load, 1, -1),
    "send_batch-1p": (send_batch_load, 1, 1),
    "send_batch-6p": (send_batch_load, 6, 1),
}


def delete_topic(bootstrap: str, name: str) -> None:
    from gregor.client.network import NetworkClient
    net = NetworkClient({"bootstrap.servers": bootstrap})
    try:
        net.request(None, "DeleteTopics", {"topic_names": [name], "timeout_ms": 30000},
                    timeout=60)
    finally:
        net.close()


def measure(broker, load: str, records: int, round_: int) -> tuple[float, float]:
    """(broker CPU ns per record, records per second of wall time)."""
    fn, partitions, acks = LOADS[load]
    topic = f"cpu-{load}-{round_}".replace("_", "-")
    create_topic(broker.bootstrap, topic, partitions)
    time.sleep(0.2)                      # let the topic creation's own work settle
    cpu0, t0 = broker_cpu_s(broker.pid), time.perf_counter()
    n = fn(broker.bootstrap, topic, partitions, records, acks)
    wall = time.perf_counter() - t0
    cpu = broker_cpu_s(broker.pid) - cpu0
    # Drop the data: gigabytes of dirty page cache (gregor) or memory (tansu) from earlier
    # rounds would otherwise slow the later ones down (writeback, throttled writes).
    delete_topic(broker.bootstrap, topic)
    return cpu / n * 1e9, n / wall


# -- micro: the produce path's pieces, old beside new ----------------------------------------

def micro() -> None:
    import random

    import numpy as np

    from gregor.protocol.records import fields, uniform, validation
    from gregor.protocol.records.header import HEADER_SIZE
    from gregor.protocol.records.parsing import complete_batch_at

    def best_us(fn, reps=20, rounds=7):
        fn()
        best = float("inf")
        for _ in range(rounds):
            t0 = time.process_time()
            for _ in range(reps):
                fn()
            best = min(best, (time.process_time() - t0) / reps)
        return best * 1e6

    def without_compiled(fn):
        def run():
            saved = validation._compiled_walk, validation._compiled_state
            validation._compiled_walk, validation._compiled_state = None, "unavailable"
            try:
                fn()
            finally:
                validation._compiled_walk, validation._compiled_state = saved
        return run

    compiled = validation.load_compiled_walk()
    n = RECORDS_PER_BATCH
    rnd = random.Random(1)
    shapes = {
        "same-size records": [(1_700_000_000_000, b"%010d" % i, b"v" * 100) for i in range(n)],
        "mixed sizes": [(1_700_000_000_000, b"%010d" % i, b"v" * rnd.randint(50, 150))
                        for i in range(n)],
    }
    print(f"\nmicro: one ~1 MiB batch of {n:,} records (10 B keys, ~100 B values), CPU per "
          "batch (best of 7), old beside new")
    for shape, recs in shapes.items():
        batch = encode_batch(recs)
        frame = b"\0" * 100 + batch              # the broker sees the batch inside a request
        view = memoryview(frame)[100:]
        data = batch[HEADER_SIZE:]
        ends = fields.record_ends(data, n)

        def old_validate():
            complete_batch_at(view, 0)            # CRC and header, as validate_batch does
            section = bytes(view[HEADER_SIZE:])
            validation._walk_fields(section, n, n - 1, True,
                                    np.array(fields.record_ends_loop(section, n),
                                             dtype=np.int64))

        rows = [
            ("record-length chain", "loop", lambda: fields.record_ends_loop(data, n),
             "run-skipping", lambda: fields.record_ends(data, n)),
            ("structure walk", "numpy", lambda: validation._walk_fields(data, n, n - 1, True,
                                                                       ends),
             "same-layout proof", lambda: uniform.plain_runs_valid(data, ends)),
            ("whole validation", "old", old_validate, "numpy paths",
             without_compiled(lambda: validation.validate_batch(view, from_client=True))),
        ]
        if compiled:
            rows.append(("whole validation", "old", old_validate, "compiled walk",
                         lambda: validation.validate_batch(view, from_client=True)))
        print(f"  {shape}:")
        for name, old_name, old, new_name, new in rows:
            a, b = best_us(old), best_us(new)
            print(f"    {name:20s} {old_name:6s} {a:7.0f} us ({a * 1e3 / n:5.0f} ns/rec)   "
                  f"{new_name:18s} {b:6.0f} us ({b * 1e3 / n:4.0f} ns/rec)  {a / b:5.1f}x less")
    if not compiled:
        print("  (numba unavailable: no compiled walk)")


# -- main ------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--loads", default=",".join(LOADS))
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                    help="also run a gregor broker from the source tree DIR under NAME, e.g. "
                         "before=/tmp/gregor-before after `git archive <commit> | tar -x -C "
                         "/tmp/gregor-before`")
    ap.add_argument("--no-micro", action="store_true")
    args = ap.parse_args()
    names = [b for b in args.brokers.split(",") if b]
    trees = dict(t.split("=", 1) for t in args.tree)
    for name, tree in trees.items():
        BROKERS[name] = lambda name=name, tree=tree: GregorTree(name, tree)
        names.append(name)
    loads = [x for x in args.loads.split(",") if x]
    if not args.no_micro:
        micro()
    brokers = {}
    try:
        for name in names:
            try:
                brokers[name] = BROKERS[name]().start()
            except (RuntimeError, SystemExit) as e:
                print(f"  {name}: not started ({e}); left out")
        for b in brokers.values():
            # the first large batches load gregor's compiled record walk (in the background,
            # ~0.5 s of CPU once per process): steady state is what is measured
            measure(b, "raw-1p", 50 * RECORDS_PER_BATCH, -1)
        time.sleep(3)
        results: dict[tuple[str, str], list] = {}
        print(f"\nbroker CPU per record, {args.records:,} records per load and round, "
              f"{args.rounds} rounds (ns of broker CPU per record; msgs/s of wall time)")
        for load in loads:
            for rnd in range(args.rounds):
                for name, b in brokers.items():      # alternate brokers within each round
                    try:
                        results.setdefault((load, name), []).append(
                            measure(b, load, args.records, rnd))
                    except Exception as e:  # one broker failing a load must not hide others
                        print(f"  {load} on {name} failed: {e!r}")
                        results.setdefault((load, name), [])
            for name in brokers:
                runs = results[(load, name)]
                if not runs:
                    continue
                cpu = [r[0] for r in runs]
                rate = max(r[1] for r in runs)
                print(f"  {load:16s} {name:18s} best {min(cpu):6.0f}  median "
                      f"{statistics.median(cpu):6.0f} ns/rec   {rate:11,.0f} msgs/s", flush=True)
        print("\nratios of best broker CPU per record (lower is cheaper for gregor):")
        for load in loads:
            best = {n: min(r[0] for r in results[(load, n)])
                    for n in brokers if results.get((load, n))}
            parts = []
            if "gregor" in best and "tansu" in best:
                parts.append(f"gregor/tansu {best['gregor'] / best['tansu']:5.2f}x")
            for other in trees:
                if "gregor" in best and other in best:
                    parts.append(f"gregor/{other} {best['gregor'] / best[other]:5.2f}x")
            if parts:
                print(f"  {load:16s} " + "   ".join(parts))
    finally:
        for b in brokers.values():
            b.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
