"""Transactional producers other than confluent-kafka's against a gregor broker process:
kafka-python's and aiokafka's (each library's own implementation of the protocol), and
gregor's asyncio and sarama-style facades. Each commits one transaction and aborts another;
read_committed readers (confluent-kafka's) see exactly the committed records, and the offsets
sent with a transaction are committed with it."""
from __future__ import annotations

import asyncio

import pytest

ck = pytest.importorskip("confluent_kafka",
                         reason="confluent-kafka is a test dependency: pip install -e '.[test]'")
from confluent_kafka import Consumer as CkConsumer, TopicPartition as CkTp  # noqa: E402

from tests.interop.targets import start_target  # noqa: E402
from tests.interop.test_interop_transactions import TIMEOUT, _create, _read  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("txn-clients") / "data", settings={
        "transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
        "group.initial.rebalance.delay.ms": 0})
    try:
        yield b
    finally:
        b.stop()


def _committed(bootstrap, group, topic, partitions=2):
    c = CkConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([CkTp(topic, p) for p in range(partitions)], timeout=TIMEOUT)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def _expect(bootstrap, topic, committed, aborted):
    got = _read(bootstrap, topic, "read_committed", expect_at_least=len(committed))
    assert sorted(got) == sorted(committed)
    everything = _read(bootstrap, topic, "read_uncommitted",
                       expect_at_least=len(committed) + len(aborted))
    assert sorted(everything) == sorted(committed + aborted)


def test_kafka_python_transactional_producer(target, topic_name):
    kp = pytest.importorskip("kafka", reason="kafka-python is a test dependency")
    from kafka.structs import OffsetAndMetadata, TopicPartition
    bs = target.bootstrap
    _create(bs, topic_name)
    p = kp.KafkaProducer(bootstrap_servers=bs, transactional_id=f"kp-{topic_name}")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(20):
            p.send(topic_name, b"c-%d" % i, partition=i % 2)
        p.send_offsets_to_transaction(
            {TopicPartition(topic_name, 0): OffsetAndMetadata(7, "", -1)}, f"g-{topic_name}")
        p.commit_transaction()
        p.begin_transaction()
        for i in range(10):
            p.send(topic_name, b"a-%d" % i, partition=i % 2)
        p.flush()
        p.abort_transaction()
    finally:
        p.close(5)
    _expect(bs, topic_name, [b"c-%d" % i for i in range(20)], [b"a-%d" % i for i in range(10)])
    assert _committed(bs, f"g-{topic_name}", topic_name)[0] == 7


def test_aiokafka_transactional_producer(target, topic_name):
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is a test dependency")
    from aiokafka.structs import TopicPartition
    bs = target.bootstrap
    _create(bs, topic_name)

    async def run():
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"ai-{topic_name}")
        await p.start()
        try:
            async with p.transaction():
                for i in range(20):
                    await p.send(topic_name, b"c-%d" % i, partition=i % 2)
                await p.send_offsets_to_transaction({TopicPartition(topic_name, 1): 5},
                                                    f"g-{topic_name}")
            await p.begin_transaction()
            for i in range(10):
                await p.send_and_wait(topic_name, b"a-%d" % i, partition=i % 2)
            await p.abort_transaction()
        finally:
            await p.stop()
    asyncio.run(run())
    _expect(bs, topic_name, [b"c-%d" % i for i in range(20)], [b"a-%d" % i for i in range(10)])
    assert _committed(bs, f"g-{topic_name}", topic_name)[1] == 5


def test_gregor_asyncio_producer_transactions(target, topic_name):
    from gregor import AsyncioProducer
    bs = target.bootstrap
    _create(bs, topic_name)

    async def run():
        p = AsyncioProducer({"bootstrap.servers": bs, "transactional.id": f"gs-{topic_name}",
                             "linger.ms": 5})
        await p.start()                                   # initialises the transactional id
        try:
            async with p.transaction():
                for i in range(20):
                    p.send_nowait(topic_name, b"c-%d" % i, partition=i % 2)
                await p.send_offsets_to_transaction({(topic_name, 0): 11}, f"g-{topic_name}")
            with pytest.raises(RuntimeError):
                async with p.transaction():
                    for i in range(10):
                        await p.send(topic_name, b"a-%d" % i, partition=i % 2)
                    raise RuntimeError("the block failed: the transaction is aborted")
            async with p.transaction():
                await p.send(topic_name, b"last", partition=1)
        finally:
            await p.close(5)
    asyncio.run(run())
    _expect(bs, topic_name, [b"c-%d" % i for i in range(20)] + [b"last"],
            [b"a-%d" % i for i in range(10)])
    assert _committed(bs, f"g-{topic_name}", topic_name)[0] == 11


def test_sarama_style_producers_transactions(target, topic_name):
    from gregor.client.producer import AsyncProducer, PartitionOffsetMetadata, ProducerMessage, \
        SyncProducer
    bs = target.bootstrap
    _create(bs, topic_name)
    sp = SyncProducer({"bootstrap.servers": bs, "transactional.id": f"ss-{topic_name}",
                       "partitioner": "sarama.manual"})
    try:
        assert sp.is_transactional() and sp.txn_status() == "ready"
        sp.begin_txn()
        assert sp.txn_status() == "in_transaction"
        for i in range(10):
            sp.send_message(ProducerMessage(topic_name, value=b"c-%d" % i, partition=i % 2))
        sp.add_offsets_to_txn({topic_name: [PartitionOffsetMetadata(1, 3, "m")]},
                              f"g-{topic_name}")
        sp.commit_txn()
        sp.begin_txn()
        sp.send_message(ProducerMessage(topic_name, value=b"a-0", partition=0))
        sp.abort_txn()
        assert sp.txn_status() == "ready"
    finally:
        sp.close(5)
    ap = AsyncProducer({"bootstrap.servers": bs, "transactional.id": f"sa-{topic_name}",
                        "partitioner": "sarama.manual"}, return_successes=True)
    try:
        ap.begin_txn()
        for i in range(10):
            ap.input().put(ProducerMessage(topic_name, value=b"d-%d" % i, partition=i % 2))
        consumed = type("Msg", (), {"topic": topic_name, "partition": 0, "offset": 41})()
        ap.add_message_to_txn(consumed, f"h-{topic_name}")
        ap.commit_txn()
        assert ap.successes().qsize() == 10
    finally:
        ap.close(5)
    _expect(bs, topic_name, [b"c-%d" % i for i in range(10)] + [b"d-%d" % i for i in range(10)],
            [b"a-0"])
    assert _committed(bs, f"g-{topic_name}", topic_name)[1] == 3
    assert _committed(bs, f"h-{topic_name}", topic_name)[0] == 42


def test_kafka_go_style_writer_refuses_a_transactional_id():
    from gregor.client.errors import ConfigError
    from gregor.client.producer import Writer
    with pytest.raises(ConfigError, match="no transactions"):
        Writer(bootstrap_servers="127.0.0.1:9", topic="t",
               config={"transactional.id": "x"})
