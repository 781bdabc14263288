"""What one send() costs, without a broker or a second thread, and the pieces behind it.

    .venv/bin/python benchmarks/bench_producer_send.py [--records 200000] [--rounds 5]

Part 1 drives a real Producer on the tests' fake network (tests/client/producer/fakes.py) in
one thread: CPU time of send() per record (the caller's side) and of the sender's drain +
encode per record (the I/O thread's side), for the shapes of benchmarks/bench_producer.py
(10 B keys, 100 B values) on 1 and 6 partitions, plus null keys and explicit partitions,
through send()'s compiled path (_fastpath.pyx) and its Python path side by side (the Python
path stages keyed records and hashes them in bulk; the compiled one hashes each key).
bench_producer.py measures the whole client against a broker; this one isolates the Python
work per record, which is what the GIL serialises.

Part 2 times the building blocks of send()'s fast path side by side with what they replaced,
so each optimisation keeps its evidence:
  - the per-record future: a call through a Python __init__ vs a bare object + two slot stores;
  - the record timestamp: int(time_ns() // 10**6) into a list (and numpy reading that list at
    encode time) vs time() * 1000.0 into an array('d') (read as a buffer at encode time);
  - distributing a keyed stage of 1 vs 4 batch.size worth of records per partition;
  - framing a Produce request with a 1 MB batch: encode_request (copies it into a new frame)
    vs client/frames.py's request_frame (keeps it by reference, sent with sendmsg);
  - encoding an uncompressed send() batch of 8,000 same-length records: the uniform encoder
    into scratch then copied into the batch (assemble_batch) vs written in place
    (build_batch_bulk's assemble_uniform_batch), and both in place: the uniform encoder vs
    the compiled list encoder (_lists.pyx, assemble_lists_batch), when built.
Best of --rounds; the machine is shared, so compare numbers within one run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from array import array
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gregor.client.frames import request_frame  # noqa: E402
from gregor.client.producer import accumulator as acc_mod  # noqa: E402
from gregor.client.producer import fastpath, staging  # noqa: E402
from gregor.client.producer.batch import FutureRecordMetadata, ProduceResult  # noqa: E402
from gregor.protocol import messages  # noqa: E402
from gregor.protocol.header import encode_request  # noqa: E402
from gregor.protocol.records.encoding import (assemble_batch, assemble_lists_batch,  # noqa: E402
                                              assemble_uniform_batch,
                                              encode_records_uniform)
from tests.client.producer.fakes import make_producer  # noqa: E402

CHUNK = 20_000        # records between sender runs: bounds memory like a real linger would


def make_keys(n):
    return [b"%010d" % i for i in range(n)]


VALUE = b"v" * 100


def drive(p, net, clock):
    """Run the sender until nothing is queued, answering every Produce; thread CPU time."""
    t0 = time.thread_time()
    p._acc.flush_stages()
    p._acc.begin_flush()
    for _ in range(10_000):
        clock.advance(0.01)
        p._sender.run_once()
        reqs = net.pending()
        for r in reqs:
            net.answer_produce(r)
        if not reqs and not p._acc.incomplete:
            break
    p._acc.end_flush()
    return time.thread_time() - t0


def send_cost(partitions, keys, mode, path):
    """(send us/record, sender us/record) for one pass over keys, through send()'s compiled
    path (_fastpath.pyx) or its Python one."""
    p, net, clock = make_producer({"t": partitions}, acks=1, **{"buffer.memory": 1 << 28})
    p.partitions_for("t")
    send = p.send if path == "compiled" else p._py_send
    t_send = t_sender = 0.0
    for lo in range(0, len(keys), CHUNK):
        chunk = keys[lo:lo + CHUNK]
        t0 = time.thread_time()
        if mode == "keyed":
            for k in chunk:
                send("t", VALUE, k)
        elif mode == "null-key":
            for _ in chunk:
                send("t", VALUE)
        else:  # explicit partition
            for i, k in enumerate(chunk):
                send("t", VALUE, k, partition=i % partitions)
        t_send += time.thread_time() - t0
        t_sender += drive(p, net, clock)
    n = len(keys)
    return t_send / n * 1e6, t_sender / n * 1e6


def best(fn, rounds):
    return min(fn() for _ in range(rounds))


# -- part 2: building blocks ----------------------------------------------------------------

class FutureWithInit:
    """The future as it was: made through a Python __init__."""
    __slots__ = ("_result", "_index")

    def __init__(self, result, index):
        self._result = result
        self._index = index


def futures_with_init(n):
    r = ProduceResult("t", 0, [])
    t0 = time.thread_time()
    for i in range(n):
        FutureWithInit(r, i)
    return (time.thread_time() - t0) / n * 1e9


def futures_bare(n):
    r = ProduceResult("t", 0, [])
    t0 = time.thread_time()
    for i in range(n):
        f = FutureRecordMetadata()
        f._result = r
        f._index = i
    return (time.thread_time() - t0) / n * 1e9


def timestamps_int_list(n):
    """Old: int ms per record into a list; the encoder then converts the list."""
    time_ns = time.time_ns
    ts = []
    t0 = time.thread_time()
    for _ in range(n):
        ts.append(time_ns() // 1000000)
    t1 = time.thread_time()
    np.asarray(ts, dtype=np.int64)
    t2 = time.thread_time()
    return (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9


def timestamps_float_array(n):
    """New: float ms per record into an array('d'); the encoder reads it as a buffer."""
    now = time.time
    ts = array("d")
    t0 = time.thread_time()
    for _ in range(n):
        ts.append(now() * 1000.0)
    t1 = time.thread_time()
    np.frombuffer(ts, dtype=np.float64).astype(np.int64)
    t2 = time.thread_time()
    return (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9


def distribute_cost(stage_batches, keys, partitions=6, batch_size=16384):
    """ns per record to partition keyed stages of stage_batches x batch.size per partition."""
    per_stage = stage_batches * batch_size * partitions // (len(keys[0]) + len(VALUE) + 12)
    stages = []
    for lo in range(0, len(keys) - per_stage + 1, per_stage):
        st = staging.KeyedStage("t", partitions, 1 << 40, 0, 0.0)
        st.keys = keys[lo:lo + per_stage]
        st.values = [VALUE] * per_stage
        for _ in range(per_stage):
            st.timestamps.append(1.7e12)
        stages.append(st)
    t0 = time.thread_time()
    for st in stages:
        staging.distribute(st, [None] * partitions, acc_mod.MERGE_LIMIT, 0, batch_size,
                           lambda b: True)
    return (time.thread_time() - t0) / (len(stages) * per_stage) * 1e9


def frame_cost(make_frame, rounds=50):
    """us per Produce request carrying one fresh 1 MB batch."""
    api = messages.api("Produce")
    batches = [os.urandom(1_000_000) for _ in range(4)]  # (zero pages would copy for free)
    t0 = time.thread_time()
    for i in range(rounds):
        make_frame(api, 8, i, "bench", {
            "transactional_id": None, "acks": 1, "timeout_ms": 30000,
            "topic_data": [{"name": "t", "partition_data": [
                {"index": 0, "records": batches[i % 4]}]}]})
    return (time.thread_time() - t0) / rounds * 1e6


def uniform_batch_cost(in_place, keys, rounds=50) -> float:
    """ns per record to encode one uncompressed batch of 8,000 send()-shaped records:
    in_place False (uniform, copied), True (uniform, in place) or "lists" (compiled)."""
    n = 8000
    ks, vs = keys[:n], [VALUE] * n
    ts = np.arange(n, dtype=np.int64) + 1_700_000_000_000
    t0 = time.thread_time()
    for _ in range(rounds):
        if in_place == "lists":
            assemble_lists_batch(ts, ks, vs, int(ts[0]), int(ts[-1]))
        elif in_place:
            assemble_uniform_batch(ts, ks, vs, int(ts[0]), int(ts[-1]))
        else:
            assemble_batch(encode_records_uniform(ts, ks, vs, int(ts[0])), n, int(ts[0]),
                           int(ts[-1]), mutable=True)
    return (time.thread_time() - t0) / (rounds * n) * 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    keys = make_keys(args.records)
    print(f"send() on a fake network, {args.records:,} records, 10 B keys, 100 B values, "
          f"best of {args.rounds} (us of CPU per record)")
    paths = ("compiled", "python") if fastpath.FastSend is not None else ("python",)
    if len(paths) == 1:
        print("  (the compiled path is not built or GREGOR_PURE_PYTHON is set: Python only)")
    print(f"  {'case':34s} {'path':>9s} {'send()':>8s} {'sender':>8s} {'total':>8s}")
    for parts, mode in ((1, "keyed"), (6, "keyed"), (6, "null-key"), (6, "explicit")):
        totals = {}
        for path in paths:
            runs = [send_cost(parts, keys, mode, path) for _ in range(args.rounds)]
            s = min(r[0] for r in runs)
            d = min(r[1] for r in runs)
            totals[path] = s + d
            print(f"  {f'{parts} partition(s), {mode}':34s} {path:>9s} {s:8.3f} {d:8.3f} "
                  f"{s + d:8.3f}")
        if len(totals) == 2:
            print(f"  {'':34s} {'python / compiled, total':>27s} "
                  f"{totals['python'] / totals['compiled']:8.2f}x")

    n = args.records
    print(f"\nbuilding blocks, ns per record (best of {args.rounds}); old vs new")
    old = best(lambda: futures_with_init(n), args.rounds)
    new = best(lambda: futures_bare(n), args.rounds)
    print(f"  future: __init__ {old:6.1f}   bare + slots {new:6.1f}   ({old / new:.2f}x)")
    old = min((timestamps_int_list(n) for _ in range(args.rounds)), key=sum)
    new = min((timestamps_float_array(n) for _ in range(args.rounds)), key=sum)
    print(f"  timestamp: int ms list {old[0]:6.1f} + encode {old[1]:5.1f}   "
          f"float ms array('d') {new[0]:6.1f} + encode {new[1]:5.1f}   "
          f"({sum(old) / sum(new):.2f}x)")
    one = best(lambda: distribute_cost(1, keys), args.rounds)
    four = best(lambda: distribute_cost(acc_mod.STAGE_BATCHES, keys), args.rounds)
    print(f"  keyed stage, 6 partitions: 1 batch per partition {one:6.1f}   "
          f"{acc_mod.STAGE_BATCHES} batches {four:6.1f}   ({one / four:.2f}x)")
    # The copies cost ~50 us when malloc recycles heap memory and ~1 ms when it hands out
    # fresh pages (page faults); which one a process sees depends on its allocation history
    # (the producer's sender thread measured ~0.7 ms per request in bench_producer.py under
    # cProfile), so the range is printed, not the best.
    olds = [frame_cost(encode_request) for _ in range(args.rounds)]
    news = [frame_cost(request_frame) for _ in range(args.rounds)]
    print(f"  Produce frame with a 1 MB batch, us per request: encode_request "
          f"{min(olds):.0f}-{max(olds):.0f}   pieces {min(news):.0f}-{max(news):.0f} "
          f"(a 1 MB batch holds ~8,000 records of 110 B)")
    old = best(lambda: uniform_batch_cost(False, keys), args.rounds)
    new = best(lambda: uniform_batch_cost(True, keys), args.rounds)
    print(f"  uncompressed batch, uniform encoder: copied into the batch {old:6.1f}   "
          f"in place {new:6.1f}   ({old / new:.2f}x)")
    if assemble_lists_batch(np.zeros(1, dtype=np.int64), [b"k"], [b"v"], 0, 0) is not None:
        lists = best(lambda: uniform_batch_cost("lists", keys), args.rounds)
        print(f"  uncompressed batch in place: uniform encoder {new:6.1f}   compiled list "
              f"encoder {lists:6.1f}   ({new / lists:.2f}x)")
    else:
        print("  (the compiled list encoder is not built or GREGOR_PURE_PYTHON is set)")


if __name__ == "__main__":
    main()
