"""What fsyncing acks=all writes costs: the gregor broker with gregor.fsync.acks.all=true
(default: acks=all is answered once the records are fsynced, by a group commit off the event
loop) against =false (Kafka's single-replica behaviour: answered after the append to the page
cache), side by side in one run.

    .venv/bin/python benchmarks/bench_broker_durability.py [--records 200000] [--requests 2000]

1. throughput: confluent-kafka produces --records records (100-byte values, 10-byte keys,
   linger.ms=5, one partition) with acks=1 and with acks=all;
2. latency: one request at a time (raw Produce v8 frames, one 100-byte record each) with
   acks=1 and acks=all; p50 / p99.
The machine is shared and noisy: compare the ratios of one run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402

from gregor.protocol.records.batch import encode_batch  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.wire import WireClient  # noqa: E402


def create_topic(port: int, topic: str) -> None:
    with WireClient(port) as c:
        r = c.request("CreateTopics", 4, {"topics": [{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}], "timeout_ms": 10000, "validate_only": False})
        assert r["topics"][0]["error_code"] == 0, r


def throughput(bootstrap: str, topic: str, records: int, acks: str) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                  "enable.idempotence": False, "queue.buffering.max.messages": 500_000})
    value = b"v" * 100
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, b"key-%06d" % (i % 1_000_000), 0)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(300)
    if left:
        raise SystemExit(f"{left} records undelivered")
    return records / (time.perf_counter() - t0)


def latency(port: int, topic: str, requests: int, acks: int) -> tuple[float, float]:
    data = encode_batch([(int(time.time() * 1000), b"key-000000", b"v" * 100, None)])
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": data}]}]}
    lat = []
    with WireClient(port) as c:
        for _ in range(requests):
            t = time.perf_counter()
            r = c.request("Produce", 8, body)
            lat.append(time.perf_counter() - t)
            assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r
    lat.sort()
    return lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    results = {}
    for fsync in ("true", "false"):
        with tempfile.TemporaryDirectory(prefix="bench-durability-") as d:
            b = BrokerProcess(Path(d) / "data", settings={"gregor.fsync.acks.all": fsync})
            b.start()
            try:
                r = {}
                for acks in ("1", "all"):
                    topic = f"t-{acks}"
                    create_topic(b.port, topic)
                    r[f"tput_acks{acks}"] = throughput(b.bootstrap, topic, args.records, acks)
                for acks in (1, -1):
                    topic = f"lat{acks}"
                    create_topic(b.port, topic)
                    r[f"lat_acks{acks}"] = latency(b.port, topic, args.requests, acks)
                results[fsync] = r
            finally:
                b.stop()
        r = results[fsync]
        print(f"fsync.acks.all={fsync:5}  produce acks=1 {r['tput_acks1']:>9,.0f} msgs/s  "
              f"acks=all {r['tput_acksall']:>9,.0f} msgs/s | one request at a time: "
              f"acks=1 p50 {r['lat_acks1'][0]:.2f} ms p99 {r['lat_acks1'][1]:.2f} ms, "
              f"acks=all p50 {r['lat_acks-1'][0]:.2f} ms p99 {r['lat_acks-1'][1]:.2f} ms")
    on, off = results["true"], results["false"]
    print(f"ratio fsync on/off: throughput acks=1 {on['tput_acks1'] / off['tput_acks1']:.2f}x, "
          f"acks=all {on['tput_acksall'] / off['tput_acksall']:.2f}x; acks=all p50 latency "
          f"{on['lat_acks-1'][0] / off['lat_acks-1'][0]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
