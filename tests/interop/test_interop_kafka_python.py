"""kafka-python against the broker: admin create, produce under every codec and acks, assigned
consumer, ListOffsets."""
from __future__ import annotations

import time

import pytest

kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency: pip install -e '.[test]'")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.errors import TopicAlreadyExistsError  # noqa: E402

from tests.interop.dataset import CODECS, Delivered, Got  # noqa: E402
from tests.interop.scenarios import (CONSUME_TIMEOUT_S, PRODUCE_TIMEOUT_S,  # noqa: E402
                                     check_list_offsets, roundtrip)

pytestmark = pytest.mark.interop


class KafkaPythonClient:
    name = "kafka-python"
    text_only = False

    def create_topic(self, bootstrap, topic, partitions):
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="interop-admin")
        try:
            try:
                admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                              replication_factor=1)])
            except TopicAlreadyExistsError:
                pass
            desc = admin.describe_topics([topic])
        finally:
            admin.close()
        assert desc and desc[0]["error_code"] == 0, f"describe_topics: {desc}"
        return len(desc[0]["partitions"])

    def produce(self, bootstrap, topic, records, codec, acks):
        cfg = {"bootstrap_servers": bootstrap}
        if codec != "none":
            cfg["compression_type"] = codec
        if acks is not None:
            cfg["acks"] = -1 if acks == "all" else int(acks)
        producer = KafkaProducer(**cfg)
        try:
            futures = [producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                     timestamp_ms=r.timestamp) for r in records]
            producer.flush(timeout=PRODUCE_TIMEOUT_S)
            out = []
            for r, f in zip(records, futures):
                md = f.get(timeout=PRODUCE_TIMEOUT_S)
                out.append(Delivered(r, md.partition, md.offset, md.timestamp))
            return out
        finally:
            producer.close(timeout=10)

    def expects_idempotence(self, acks):
        return acks in (None, "all")  # kafka-python 3's default; acks 0/1 turn it off

    def _consumer(self, bootstrap):
        return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")

    def consume(self, bootstrap, topic, partitions, count):
        consumer = self._consumer(bootstrap)
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            out: list[Got] = []
            deadline = time.monotonic() + CONSUME_TIMEOUT_S
            while len(out) < count and time.monotonic() < deadline:
                for recs in consumer.poll(timeout_ms=500).values():
                    for m in recs:
                        assert m.timestamp_type == 0, f"timestamp type {m.timestamp_type} at {m}"
                        out.append(Got(m.partition, m.offset, m.key, m.value,
                                       tuple((k, v) for k, v in m.headers), m.timestamp))
            return out
        finally:
            consumer.close()

    def list_offsets(self, bootstrap, topic, partitions, probes):
        consumer = self._consumer(bootstrap)
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            earliest = {tp.partition: o for tp, o in consumer.beginning_offsets(tps).items()}
            latest = {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
            by_time = {}
            for i in range(max(len(v) for v in probes.values())):
                query = {TopicPartition(topic, p): ts[i] for p, ts in probes.items() if i < len(ts)}
                for tp, ot in consumer.offsets_for_times(query).items():
                    by_time[(tp.partition, query[tp])] = None if ot is None else ot.offset
            return earliest, latest, by_time
        finally:
            consumer.close()


CLIENT = KafkaPythonClient()
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
    _roundtrip(target, topic_name, "lz4", acks)


def test_list_offsets_earliest_latest_by_timestamp(target, topic_name):
    rt = _results.get(("none", None)) or _roundtrip(target, topic_name, "none")
    check_list_offsets(CLIENT, target.bootstrap, rt)
