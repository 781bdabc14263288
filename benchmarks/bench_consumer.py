"""Consumers side by side against one gregor broker: how fast each reads the same topic.

    .venv/bin/python benchmarks/bench_consumer.py [--records 300000] [--rounds 2]

The topic (one partition, 10-byte keys, 100-byte values, lz4 and uncompressed variants) is
written once with confluent-kafka. Then, per round, each reader assigns offset 0 and reads
until it has every record: gregor poll() (records), gregor poll_batches() (columns),
gregor poll_batches() + to_arrow(), gregor poll_batches(arrow=True) (+ to_arrow()),
confluent-kafka consume(), kafka-python poll(). The same topic is also written to a foreign
broker (tansu, in memory; skipped with --no-tansu or when it is not installed) and read there by
confluent-kafka and gregor poll_batches(). Prints records/s per reader, the ratio to
confluent-kafka reading from gregor and the ratio of the Arrow output to
poll_batches()+to_arrow() (best round of each). The machine is shared and noisy: compare
ratios within one run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer as CKConsumer, Producer as CKProducer, TopicPartition  # noqa
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import pyarrow  # noqa: E402,F401  (imported up front: its ~0.4 s import is not a read cost)

from gregor import Consumer  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_broker import UNPACED, TansuBroker  # noqa: E402


def fill(bootstrap: str, topic: str, n: int, codec: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = CKProducer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": codec,
                    "batch.num.messages": 10000, "queue.buffering.max.messages": 200000})
    value = b"v" * 100
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, key=b"k%09d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def read_gregor(bootstrap, topic, n, mode):
    c = Consumer({"bootstrap.servers": bootstrap, "fetch.max.wait.ms": 100})
    c.assign([(topic, 0, 0)])
    got = 0
    t0 = time.perf_counter()
    while got < n:
        if mode == "poll":
            got += len(c.poll(1.0))
        else:
            for b in c.poll_batches(1.0, arrow=mode.startswith("arrow-out")):
                got += len(b)
                if mode in ("arrow", "arrow-out+batch"):
                    b.to_arrow()
    dt = time.perf_counter() - t0
    c.close()
    return dt


def read_confluent(bootstrap, topic, n, extra=None):
    # with librdkafka's defaults it stops fetching for 1 s (fetch.queue.backoff.ms) whenever
    # 100,000 records wait in its queue: "unpaced" lowers that to 10 ms
    c = CKConsumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                    "enable.auto.commit": False, **(extra or {})})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    t0 = time.perf_counter()
    while got < n:
        got += len(c.consume(10000, 1.0))
    dt = time.perf_counter() - t0
    c.close()
    return dt


def read_kafka_python(bootstrap, topic, n):
    import kafka
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = kafka.TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    got = 0
    t0 = time.perf_counter()
    while got < n:
        for records in c.poll(1000, max_records=10000).values():
            got += len(records)
    dt = time.perf_counter() - t0
    c.close()
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-tansu", action="store_true")
    args = ap.parse_args()
    n = args.records
    tansu = None if args.no_tansu or TansuBroker.binary() is None else TansuBroker().start()
    try:
        run(args, n, tansu)
    finally:
        if tansu is not None:
            tansu.stop()


def run(args, n, tansu):
    with BrokerProcess(tempfile.mkdtemp(prefix="bench-consumer-") + "/data") as broker:
        for codec in ("none", "lz4"):
            topic = f"bench-{codec}"
            fill(broker.bootstrap, topic, n, codec)
            readers = {
                "gregor poll()": lambda: read_gregor(broker.bootstrap, topic, n, "poll"),
                "gregor poll_batches()": lambda: read_gregor(broker.bootstrap, topic, n,
                                                             "batches"),
                "gregor poll_batches()+arrow": lambda: read_gregor(broker.bootstrap, topic, n,
                                                                   "arrow"),
                "gregor poll_batches(arrow=True)": lambda: read_gregor(
                    broker.bootstrap, topic, n, "arrow-out"),
                "gregor poll_batches(arrow=True)+batch": lambda: read_gregor(
                    broker.bootstrap, topic, n, "arrow-out+batch"),
                "confluent-kafka": lambda: read_confluent(broker.bootstrap, topic, n),
                "confluent-kafka unpaced": lambda: read_confluent(broker.bootstrap, topic, n,
                                                                  UNPACED),
                "kafka-python": lambda: read_kafka_python(broker.bootstrap, topic, n),
            }
            if tansu is not None:
                fill(tansu.bootstrap, topic, n, codec)
                readers["confluent-kafka (tansu)"] = lambda: read_confluent(tansu.bootstrap,
                                                                            topic, n)
                readers["confluent-kafka unpaced (tansu)"] = lambda: read_confluent(
                    tansu.bootstrap, topic, n, UNPACED)
                readers["gregor poll_batches() (tansu)"] = lambda: read_gregor(
                    tansu.bootstrap, topic, n, "batches")
            best = {name: float("inf") for name in readers}
            for _ in range(args.rounds):
                for name, fn in readers.items():  # interleaved, so noise hits all alike
                    best[name] = min(best[name], fn())
            base = n / best["confluent-kafka"]
            print(f"\n{n:,} records, 10 B keys, 100 B values, compression={codec}")
            for name, dt in best.items():
                rate = n / dt
                print(f"  {name:38s} {rate:12,.0f} records/s  {rate / base:5.2f}x confluent")
            ratio = best["gregor poll_batches()+arrow"] / best[
                "gregor poll_batches(arrow=True)+batch"]
            print(f"  Arrow output vs list columns + to_arrow(): {ratio:.2f}x")


if __name__ == "__main__":
    main()
