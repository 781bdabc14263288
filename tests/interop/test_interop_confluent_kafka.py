"""confluent-kafka (librdkafka) against the broker: admin create, produce under every codec and
acks, assigned consumer, ListOffsets."""
from __future__ import annotations

import time

import pytest

ck = pytest.importorskip("confluent_kafka",
                         reason="confluent-kafka is a test dependency: pip install -e '.[test]'")
from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer,  # noqa: E402
                             KafkaError, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.interop.dataset import CODECS, Delivered, Got  # noqa: E402
from tests.interop.scenarios import (CONSUME_TIMEOUT_S, PRODUCE_TIMEOUT_S,  # noqa: E402
                                     check_list_offsets, roundtrip)

pytestmark = pytest.mark.interop


class ConfluentKafkaClient:
    name = "confluent-kafka"
    text_only = False

    def __init__(self, **producer_extra):
        self.producer_extra = producer_extra  # settings on top of the client's defaults

    def create_topic(self, bootstrap, topic, partitions):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        fut = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30)[topic]
        try:
            fut.result(timeout=60)
        except ck.KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        md = admin.list_topics(topic, timeout=30).topics[topic]
        assert md.error is None, f"metadata for {topic}: {md.error}"
        return len(md.partitions)

    def produce(self, bootstrap, topic, records, codec, acks):
        cfg = {"bootstrap.servers": bootstrap, **self.producer_extra}
        if codec != "none":
            cfg["compression.type"] = codec
        if acks is not None:
            cfg["acks"] = acks
        producer = Producer(cfg)
        reports: dict[int, tuple] = {}
        errors = []

        def on_delivery(i):
            def cb(err, msg):
                if err is not None:
                    errors.append((i, err))
                else:
                    reports[i] = (msg.partition(), msg.offset(), msg.timestamp())
            return cb

        for i, r in enumerate(records):
            while True:
                try:
                    producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                                     timestamp=r.timestamp, on_delivery=on_delivery(i))
                    break
                except BufferError:  # local queue full: let deliveries drain, then retry
                    producer.poll(0.1)
        remaining = producer.flush(PRODUCE_TIMEOUT_S)
        assert remaining == 0, f"{remaining} records still unacknowledged after flush"
        assert not errors, f"{len(errors)} delivery errors, first: {errors[:3]}"
        out = []
        for i, r in enumerate(records):
            p, off, (ts_type, ts) = reports[i]
            if acks == "0":
                off = -1  # no offsets without a response
            out.append(Delivered(r, p, off, ts if ts_type == TIMESTAMP_CREATE_TIME else None))
        return out

    def expects_idempotence(self, acks):
        return bool(self.producer_extra.get("enable.idempotence"))

    def _consumer(self, bootstrap):
        # group.id only because the client insists on one; nothing is committed.
        return Consumer({"bootstrap.servers": bootstrap, "group.id": "interop-assign",
                         "enable.auto.commit": False, "enable.auto.offset.store": False,
                         "auto.offset.reset": "earliest"})

    def consume(self, bootstrap, topic, partitions, count):
        consumer = self._consumer(bootstrap)
        try:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            out: list[Got] = []
            deadline = time.monotonic() + CONSUME_TIMEOUT_S
            while len(out) < count and time.monotonic() < deadline:
                for m in consumer.consume(num_messages=1000, timeout=0.5):
                    if m.error():
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        raise AssertionError(f"consumer error: {m.error()}")
                    ts_type, ts = m.timestamp()
                    assert ts_type == TIMESTAMP_CREATE_TIME, f"timestamp type {ts_type}"
                    out.append(Got(m.partition(), m.offset(), m.key(), m.value(),
                                   tuple(m.headers() or ()), ts))
            return out
        finally:
            consumer.close()

    def list_offsets(self, bootstrap, topic, partitions, probes):
        consumer = self._consumer(bootstrap)
        try:
            earliest, latest = {}, {}
            for p in range(partitions):
                lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30,
                                                        cached=False)
                earliest[p], latest[p] = lo, hi
            by_time = {}
            for i in range(max(len(v) for v in probes.values())):
                query = [TopicPartition(topic, p, ts[i]) for p, ts in probes.items() if i < len(ts)]
                for q, tp in zip(query, consumer.offsets_for_times(query, timeout=30)):
                    assert tp.error is None, f"offsets_for_times {tp}: {tp.error}"
                    # librdkafka reports "no such offset" as -1 (the end)
                    by_time[(tp.partition, q.offset)] = None if tp.offset < 0 else tp.offset
            return earliest, latest, by_time
        finally:
            consumer.close()


CLIENT = ConfluentKafkaClient()
_results = {}


def _roundtrip(target, topic, codec, acks=None):
    rt = roundtrip(CLIENT, target.bootstrap, topic, codec, acks)
    _results[(codec, acks)] = rt
    return rt


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_every_codec_default_settings(target, topic_name, codec):
    _roundtrip(target, topic_name, codec)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_roundtrip_every_acks(target, topic_name, acks):
    _roundtrip(target, topic_name, "zstd", acks)


def test_roundtrip_idempotent_producer(target, topic_name):
    """enable.idempotence=true: InitProducerId, sequence numbers; same exact round trip."""
    roundtrip(ConfluentKafkaClient(**{"enable.idempotence": True}), target.bootstrap, topic_name, "snappy")


def test_list_offsets_earliest_latest_by_timestamp(target, topic_name):
    rt = _results.get(("none", None)) or _roundtrip(target, topic_name, "none")
    check_list_offsets(CLIENT, target.bootstrap, rt)
