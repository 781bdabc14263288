"""aiokafka against the broker: admin create, produce under every codec and acks, assigned
consumer, ListOffsets."""
from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("aiokafka", reason="aiokafka is a test dependency: pip install -e '.[test]'")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402
from aiokafka.errors import TopicAlreadyExistsError  # noqa: E402

from tests.interop.dataset import CODECS, Delivered, Got  # noqa: E402
from tests.interop.scenarios import (CONSUME_TIMEOUT_S, PRODUCE_TIMEOUT_S,  # noqa: E402
                                     check_list_offsets, roundtrip)

pytestmark = pytest.mark.interop


def run(coro):
    return asyncio.run(coro)


class AioKafkaClient:
    name = "aiokafka"
    text_only = False

    def __init__(self, **producer_extra):
        self.producer_extra = producer_extra  # settings on top of the client's defaults

    def create_topic(self, bootstrap, topic, partitions):
        async def go():
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                try:
                    resp = await admin.create_topics(
                        [NewTopic(topic, num_partitions=partitions, replication_factor=1)])
                    for t in getattr(resp, "topic_errors", None) or getattr(resp, "topics", []):
                        code = t[1]
                        assert code in (0, TopicAlreadyExistsError.errno), f"create_topics: {t}"
                except TopicAlreadyExistsError:
                    pass
                desc = await admin.describe_topics([topic])
            finally:
                await admin.close()
            assert desc and desc[0]["error_code"] == 0, f"describe_topics: {desc}"
            return len(desc[0]["partitions"])
        return run(go())

    def produce(self, bootstrap, topic, records, codec, acks):
        async def go():
            cfg = {"bootstrap_servers": bootstrap, **self.producer_extra}
            if codec != "none":
                cfg["compression_type"] = codec
            if acks is not None:
                cfg["acks"] = "all" if acks == "all" else int(acks)
            producer = AIOKafkaProducer(**cfg)
            await producer.start()
            try:
                futures = [await producer.send(topic, key=r.key, value=r.value,
                                               headers=list(r.headers), timestamp_ms=r.timestamp)
                           for r in records]
                mds = await asyncio.wait_for(asyncio.gather(*futures), PRODUCE_TIMEOUT_S)
            finally:
                await producer.stop()
            # acks=0 resolves every future to None. The reported timestamp is not compared:
            # aiokafka reports the batch's first CreateTime for every record of a batch.
            return [Delivered(r, -1, -1) if md is None else Delivered(r, md.partition, md.offset)
                    for r, md in zip(records, mds)]
        return run(go())

    def expects_idempotence(self, acks):
        return bool(self.producer_extra.get("enable_idempotence"))

    def consume(self, bootstrap, topic, partitions, count):
        async def go():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                        enable_auto_commit=False, auto_offset_reset="earliest")
            await consumer.start()
            try:
                tps = [TopicPartition(topic, p) for p in range(partitions)]
                consumer.assign(tps)
                await consumer.seek_to_beginning(*tps)
                out: list[Got] = []
                deadline = time.monotonic() + CONSUME_TIMEOUT_S
                while len(out) < count and time.monotonic() < deadline:
                    batches = await consumer.getmany(timeout_ms=500, max_records=2000)
                    for recs in batches.values():
                        for m in recs:
                            assert m.timestamp_type == 0, f"timestamp type {m.timestamp_type}"
                            out.append(Got(m.partition, m.offset, m.key, m.value,
                                           tuple(m.headers), m.timestamp))
                return out
            finally:
                await consumer.stop()
        return run(go())

    def list_offsets(self, bootstrap, topic, partitions, probes):
        async def go():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                        enable_auto_commit=False)
            await consumer.start()
            try:
                tps = [TopicPartition(topic, p) for p in range(partitions)]
                earliest = {tp.partition: o for tp, o in
                            (await consumer.beginning_offsets(tps)).items()}
                latest = {tp.partition: o for tp, o in (await consumer.end_offsets(tps)).items()}
                by_time = {}
                for i in range(max(len(v) for v in probes.values())):
                    query = {TopicPartition(topic, p): ts[i]
                             for p, ts in probes.items() if i < len(ts)}
                    for tp, ot in (await consumer.offsets_for_times(query)).items():
                        by_time[(tp.partition, query[tp])] = None if ot is None else ot.offset
                return earliest, latest, by_time
            finally:
                await consumer.stop()
        return run(go())


CLIENT = AioKafkaClient()
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
    _roundtrip(target, topic_name, "gzip", acks)


def test_roundtrip_idempotent_producer(target, topic_name):
    """enable_idempotence=True: InitProducerId and sequence numbers, same exact round trip."""
    roundtrip(AioKafkaClient(enable_idempotence=True), target.bootstrap, topic_name, "lz4")


def test_list_offsets_earliest_latest_by_timestamp(target, topic_name):
    rt = _results.get(("none", None)) or _roundtrip(target, topic_name, "none")
    check_list_offsets(CLIENT, target.bootstrap, rt)
