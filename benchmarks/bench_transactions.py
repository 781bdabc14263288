"""Transactions against the gregor broker, side by side in one run (ratios, never timed tests).

    .venv/bin/python benchmarks/bench_transactions.py [--records 300000] [--commit-ms 100]

1. produce: idempotent vs transactional with a commit every --commit-ms, for confluent-kafka
   and for gregor's producer (send()); msgs/s of each and the ratio transactional/idempotent
   (the issue's target: >= 0.9x).
2. fetch: a topic where 10% of the transactions are aborted, read by confluent-kafka and by
   gregor's consumer with read_uncommitted and read_committed; msgs/s and the ratio
   read_committed/read_uncommitted (target: >= 0.9x; read_committed also drops the aborted
   tenth, so its rate counts the records it delivers).
One partition, 10-byte keys and 100-byte values, linger.ms 5, the broker on disk.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_broker import GregorBroker  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

VALUE = b"v" * 100


def _topic(bootstrap, name):
    create(bootstrap, name)
    return name


def create(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)


def produce_confluent(bootstrap, topic, n, commit_ms, transactional):
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
            "queue.buffering.max.messages": 1_000_000}
    if transactional:
        conf["transactional.id"] = f"bench-{topic}"
    p = Producer(conf)
    if transactional:
        p.init_transactions(30)
        p.begin_transaction()
    start = last = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, VALUE, b"k%09d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.001)
        if transactional and (i & 1023) == 0 and time.perf_counter() - last >= commit_ms / 1000:
            p.commit_transaction(30)
            p.begin_transaction()
            last = time.perf_counter()
    if transactional:
        p.commit_transaction(60)
    p.flush(60)
    return n / (time.perf_counter() - start)


def produce_gregor(bootstrap, topic, n, commit_ms, transactional):
    from gregor import Producer as GProducer
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    if transactional:
        conf["transactional.id"] = f"bench-{topic}"
    p = GProducer(conf)
    if transactional:
        p.init_transactions(30)
        p.begin_transaction()
    send = p.send
    start = last = time.perf_counter()
    for i in range(n):
        send(topic, VALUE, b"k%09d" % i, partition=0)
        if transactional and (i & 1023) == 0 and time.perf_counter() - last >= commit_ms / 1000:
            p.commit_transaction(30)
            p.begin_transaction()
            last = time.perf_counter()
    if transactional:
        p.commit_transaction(60)
    p.flush(60)
    rate = n / (time.perf_counter() - start)
    p.close()
    return rate


def fill_with_aborts(bootstrap, topic, n, per_txn=1000):
    """n records in transactions of per_txn; every tenth transaction aborted."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"fill-{topic}",
                  "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    p.init_transactions(30)
    kept = 0
    for t in range(n // per_txn):
        p.begin_transaction()
        for i in range(per_txn):
            p.produce(topic, VALUE, b"k%09d" % i, partition=0)
        if t % 10 == 9:
            p.flush(60)
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
            kept += per_txn
    return kept


def consume_confluent(bootstrap, topic, expect, isolation):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"b-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 5})
    c.assign([TopicPartition(topic, 0, 0)])
    got, start = 0, time.perf_counter()
    while got < expect and time.perf_counter() - start < 120:
        for m in c.consume(10000, 0.5):
            if not m.error():
                got += 1
    rate = got / (time.perf_counter() - start)
    c.close()
    return rate


def consume_gregor(bootstrap, topic, expect, isolation):
    from gregor import Consumer as GConsumer
    c = GConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation})
    c.assign([(topic, 0, 0)])
    got, start = 0, time.perf_counter()
    while got < expect and time.perf_counter() - start < 120:
        for chunk in c.poll_batches(0.5, arrow=True):
            got += len(chunk.offsets)
    rate = got / (time.perf_counter() - start)
    c.close()
    return rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--commit-ms", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2, help="rounds; the best of each is shown")
    args = ap.parse_args()
    n = args.records
    b = GregorBroker().start()
    try:
        bs = b.bootstrap
        print(f"produce: {n} records, commit every {args.commit_ms} ms (msgs/s)")
        for name, fn in (("confluent-kafka", produce_confluent), ("gregor send()", produce_gregor)):
            rates = {"idempotent": 0.0, "transactional": 0.0}
            fn(bs, _topic(bs, f"warm-{name.split()[0]}"), n // 10, args.commit_ms, False)
            for r in range(args.repeat):          # alternate, best of each
                for mode in ("idempotent", "transactional"):
                    topic = _topic(bs, f"p-{name.split()[0]}-{mode}-{r}")
                    rates[mode] = max(rates[mode], fn(bs, topic, n, args.commit_ms,
                                                      mode == "transactional"))
            print(f"  {name:16s} idempotent {rates['idempotent']:>10,.0f}  transactional "
                  f"{rates['transactional']:>10,.0f}  ratio "
                  f"{rates['transactional'] / rates['idempotent']:.2f}x")
        topic = "fetch-aborts"
        create(bs, topic)
        kept = fill_with_aborts(bs, topic, n)
        print(f"fetch: {n} records, 10% in aborted transactions ({kept} committed) (msgs/s)")
        for name, fn in (("confluent-kafka", consume_confluent), ("gregor Arrow", consume_gregor)):
            fn(bs, topic, kept, "read_committed")          # warm-up
            unc = com = 0.0
            for _ in range(args.repeat):
                unc = max(unc, fn(bs, topic, n, "read_uncommitted"))
                com = max(com, fn(bs, topic, kept, "read_committed"))
            print(f"  {name:16s} read_uncommitted {unc:>10,.0f}  read_committed {com:>10,.0f}"
                  f"  ratio {com / unc:.2f}x")
    finally:
        b.stop()


if __name__ == "__main__":
    main()
