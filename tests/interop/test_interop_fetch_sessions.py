"""KIP-227 fetch sessions judged by kafka-python's default fetcher (sessions on by default):
a consumer of many partitions gets incremental fetches and still reads every record."""
from __future__ import annotations

import time

import pytest

kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency: pip install -e '.[test]'")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

from gregor.testing import Broker  # noqa: E402
from tests.interop.scenarios import CONSUME_TIMEOUT_S, PRODUCE_TIMEOUT_S  # noqa: E402

pytestmark = pytest.mark.interop

PARTITIONS = 60


def _consume(consumer, want: int, deadline: float) -> list:
    got = []
    while len(got) < want and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=200).values():
            got.extend((m.partition, m.offset, m.value) for m in recs)
    return got


def test_kafka_python_consumer_uses_incremental_fetches_and_reads_everything():
    with Broker() as broker:
        broker.create_topic("many", partitions=PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 fetch_max_wait_ms=100)
        try:
            tps = [TopicPartition("many", p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            for round_ in range(3):
                # a few busy partitions among many idle ones, in rounds, so that later
                # rounds arrive while the session is open
                sent = set()
                for i in range(20):
                    p = (round_ * 7 + i * 3) % PARTITIONS
                    value = b"r%d-%d" % (round_, i)
                    producer.send("many", value=value, partition=p)
                    sent.add((p, value))
                producer.flush(timeout=PRODUCE_TIMEOUT_S)
                got = _consume(consumer, len(sent), time.monotonic() + CONSUME_TIMEOUT_S)
                assert {(p, v) for p, _, v in got} == sent and len(got) == len(sent), \
                    f"round {round_}: {got}"
                # idle polls: incremental fetches that name nothing and get nothing back
                assert consumer.poll(timeout_ms=300) == {}
        finally:
            consumer.close()
            producer.close(timeout=10)

        fetches = [r for r in broker.requests("Fetch") if r.version >= 7]
        assert fetches, "kafka-python sent no Fetch v7+"
        incremental = [r for r in fetches if r["session_id"] != 0 and r["session_epoch"] > 0]
        assert len(incremental) >= 4, [(r["session_id"], r["session_epoch"]) for r in fetches]
        # incremental requests name only what changed, not all 60 partitions
        sizes = [sum(len(t["partitions"]) for t in r["topics"]) for r in incremental]
        assert min(sizes) < PARTITIONS, sizes
        stats = broker.run_on_loop(lambda b: dict(b.fetch_sessions.stats))
        assert stats["created"] >= 1 and stats["incremental"] >= 3
        assert stats["partitions_omitted"] > stats["partitions_sent"], stats
