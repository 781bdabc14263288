"""The producer and its facades against a real broker: results, callbacks, flush/close,
errors refused before queueing, metrics, SyncProducer / AsyncProducer / Writer / asyncio."""
from __future__ import annotations

import asyncio

import pytest

from gregor import AsyncioProducer, AsyncProducer, Producer, SyncProducer, Writer
from gregor.client.errors import KafkaTimeoutError, ProducerClosedError
from gregor.client.producer import Message, ProducerMessage, WriteErrors


@pytest.fixture
def conf(client_broker):
    return {"bootstrap.servers": client_broker.bootstrap}


def test_send_returns_metadata_and_callbacks_run_in_order(conf, new_topic):
    topic = new_topic(1)
    seen = []
    with Producer(conf, linger_ms=1) as p:
        futs = [p.send(topic, b"v%d" % i, key=b"k", callback=lambda md, err, i=i:
                       seen.append((i, md.offset, err))) for i in range(50)]
        mds = [f.result(30) for f in futs]
    assert [m.offset for m in mds] == list(range(50))
    assert all(m.topic == topic and m.partition == 0 for m in mds)
    assert seen == [(i, i, None) for i in range(50)]


def test_python_keyword_config_and_explicit_partition(client_broker, new_topic):
    topic = new_topic(3)
    with Producer(bootstrap_servers=client_broker.bootstrap, acks="all", linger_ms=5) as p:
        md = p.send(topic, "text value", key="text key", partition=2,
                    timestamp_ms=123456).result(30)
        assert (md.partition, md.timestamp) == (2, 123456)
        assert p.partitions_for(topic) == [0, 1, 2]


def test_flush_waits_for_everything_sent_before(conf, new_topic):
    topic = new_topic(2)
    p = Producer(conf, **{"linger.ms": 10000})       # only flush makes these go
    futs = [p.send(topic, b"x") for _ in range(100)]
    p.flush(30)
    assert all(f.done() for f in futs)
    m = p.metrics()
    assert m["record-send-total"] == 100 and m["requests-in-flight"] == 0
    assert m["buffer-available-bytes"] == m["buffer-total-bytes"]
    for name in ("record-send-rate", "record-error-rate", "record-retry-rate", "batch-size-avg",
                 "record-queue-time-avg", "request-latency-avg", "bufferpool-wait-time",
                 "compression-rate-avg"):
        assert name in m
    p.close()


def test_close_drains_then_send_is_refused(conf, new_topic):
    topic = new_topic(1)
    p = Producer(conf, **{"linger.ms": 1000})
    fut = p.send(topic, b"last")
    p.close()
    assert fut.result(0).offset == 0
    with pytest.raises(ProducerClosedError):
        p.send(topic, b"late")


def test_record_too_large_is_refused_before_queueing(conf, new_topic):
    topic = new_topic(1)
    with Producer(conf, **{"max.request.size": 10000}) as p:
        with pytest.raises(Exception, match="max.request.size"):
            p.send(topic, b"x" * 20000)
        assert p.metrics()["buffer-available-bytes"] == p.metrics()["buffer-total-bytes"]


def test_missing_topic_times_out_after_max_block(client_broker):
    with Producer({"bootstrap.servers": client_broker.bootstrap, "max.block.ms": 300}) as p:
        with pytest.raises(KafkaTimeoutError, match="max.block.ms"):
            p.send("no-such-topic-here", b"x", partition=5)


def test_serializer_errors_name_the_key(conf, new_topic):
    topic = new_topic(1)
    with Producer(conf, value_serializer=lambda v: v.encode()) as p:
        assert p.send(topic, "ok").result(30).offset == 0
        with pytest.raises(ValueError, match="value.serializer"):
            p.send(topic, 12345)


def test_interceptors_see_sends_and_acknowledgements(conf, new_topic):
    topic = new_topic(1)
    events = []

    class Tagger:
        def on_send(self, rec):
            rec.headers = [("tagged", b"1")]
            events.append("send")
            return rec

        def on_acknowledgement(self, md, err):
            events.append(("ack", md.offset if md else None, err))

    with Producer(conf, interceptor_classes=[Tagger()]) as p:
        p.send(topic, b"v").result(30)
    assert events == ["send", ("ack", 0, None)]


def test_partitioner_by_librdkafka_name(conf, new_topic):
    topic = new_topic(4)
    with Producer(conf, partitioner="consistent") as p:
        parts = {p.send(topic, b"v", key=b"same").result(30).partition for _ in range(5)}
    assert len(parts) == 1


def test_transactional_producer_sends_only_inside_a_transaction(conf):
    from gregor.client.producer.transactions import TransactionError
    with Producer(conf, transactional_id="tx") as p:
        with pytest.raises(TransactionError, match="init_transactions"):
            p.begin_transaction()
        with pytest.raises(TransactionError, match="inside a transaction"):
            p.send("t", b"v")
        with pytest.raises(TransactionError, match="needs an open transaction"):
            p.commit_transaction(1)


def test_sync_producer(conf, new_topic):
    topic = new_topic(2)
    sp = SyncProducer(conf)
    try:
        msg = ProducerMessage(topic, value=b"v", key=b"k")
        partition, offset = sp.send_message(msg)
        assert (msg.partition, msg.offset) == (partition, offset) and offset == 0
    finally:
        sp.close()


def test_async_producer_channels(conf, new_topic):
    topic = new_topic(1)
    ap = AsyncProducer({**conf, "max.request.size": 5000}, return_successes=True)
    try:
        for i in range(10):
            ap.input().put(ProducerMessage(topic, value=b"v%d" % i, metadata=i))
        ap.input().put(ProducerMessage(topic, value=b"x" * 10000, metadata="big"))
        ok = [ap.successes().get(timeout=30) for _ in range(10)]
        assert [m.metadata for m in ok] == list(range(10))
        assert [m.offset for m in ok] == list(range(10))
        err = ap.errors().get(timeout=30)
        assert err.msg.metadata == "big" and "max.request.size" in str(err.err)
    finally:
        assert ap.close() == []


def test_writer_has_one_error_slot_per_message(conf, new_topic):
    topic = new_topic(2)
    with Writer(conf["bootstrap.servers"], topic=topic, required_acks=1,
                config={"max.request.size": 5000}) as w:
        msgs = [Message(value=b"a"), Message(value=b"b" * 10000), Message(key=b"k", value=b"c")]
        with pytest.raises(WriteErrors) as e:
            w.write_messages(*msgs)
        errs = list(e.value)
        assert len(errs) == 3 and errs[0] is None and errs[2] is None
        assert "max.request.size" in str(errs[1])
        assert msgs[0].offset >= 0 and msgs[2].offset >= 0
        w.write_messages(Message(value=b"d"))
        s = w.stats()
        assert (s.writes, s.messages, s.errors) == (2, 4, 1)


def test_writer_async_completion(conf, new_topic):
    topic = new_topic(1)
    done = []
    import threading
    ev = threading.Event()

    def completion(messages, err):
        done.append((len(messages), err))
        ev.set()
    with Writer(conf["bootstrap.servers"], topic=topic, async_=True, completion=completion,
                batch_timeout=0.01, required_acks=-1) as w:
        w.write_messages(Message(value=b"1"), Message(value=b"2"))
        assert ev.wait(30)
    assert done == [(2, None)]


def test_asyncio_producer(conf, new_topic):
    topic = new_topic(1)

    async def main():
        async with AsyncioProducer(conf) as p:
            md = await p.send(topic, b"first", key=b"k")
            futs = [p.send_nowait(topic, b"v%d" % i) for i in range(100)]
            mds = await asyncio.gather(*futs)
            return md, mds
    md, mds = asyncio.run(main())
    assert md.offset == 0 and [m.offset for m in mds] == list(range(1, 101))
