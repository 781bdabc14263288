"""Transactions with real clients against a gregor broker process: confluent-kafka's
transactional producer, and read_committed consumers of confluent-kafka, kafka-python and
aiokafka that must never see an aborted record nor one of an open transaction."""
from __future__ import annotations

import time

import pytest

ck = pytest.importorskip("confluent_kafka",
                         reason="confluent-kafka is a test dependency: pip install -e '.[test]'")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.interop.targets import start_target  # noqa: E402

pytestmark = pytest.mark.interop
TIMEOUT = 30


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """A broker whose coordinator looks for timed-out transactions every second."""
    b = start_target(tmp_path_factory.mktemp("txn-broker") / "data", settings={
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        "transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 5,
        "group.initial.rebalance.delay.ms": 0})
    try:
        yield b
    finally:
        b.stop()


def _create(bootstrap, topic, partitions=2):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(TIMEOUT)


def _txn_producer(bootstrap, tid, **extra):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                  "linger.ms": 5, **extra})
    p.init_transactions(TIMEOUT)
    return p


def _write(p, topic, values, partitions=2):
    for i, v in enumerate(values):
        p.produce(topic, value=v, key=b"k%d" % i, partition=i % partitions)


def _read(bootstrap, topic, isolation, partitions=2, expect_at_least=0, settle=2.0):
    """Values a fresh assigned consumer reads from the start (until nothing new arrives
    for `settle` seconds after at least expect_at_least values)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, quiet_since, deadline = [], time.monotonic(), time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                if len(out) >= expect_at_least and time.monotonic() - quiet_since > settle:
                    break
                continue
            if m.error():
                continue
            out.append(m.value())
            quiet_since = time.monotonic()
    finally:
        c.close()
    return out


def test_commit_and_abort_seen_by_read_committed_consumers(target, topic_name):
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name)
    p = _txn_producer(bootstrap, f"tx-{topic_name}")
    p.begin_transaction()
    _write(p, topic_name, [b"c1-%d" % i for i in range(50)])
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    _write(p, topic_name, [b"a-%d" % i for i in range(50)])
    p.flush(TIMEOUT)
    p.abort_transaction(TIMEOUT)
    p.begin_transaction()
    _write(p, topic_name, [b"c2-%d" % i for i in range(50)])
    p.commit_transaction(TIMEOUT)
    committed = {b"c1-%d" % i for i in range(50)} | {b"c2-%d" % i for i in range(50)}

    got = _read(bootstrap, topic_name, "read_committed", expect_at_least=100)
    assert sorted(got) == sorted(committed)
    everything = _read(bootstrap, topic_name, "read_uncommitted", expect_at_least=150)
    assert len(everything) == 150 and set(everything) >= committed

    from kafka import KafkaConsumer, TopicPartition as KTP
    kc = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                       enable_auto_commit=False, consumer_timeout_ms=3000)
    kc.assign([KTP(topic_name, 0), KTP(topic_name, 1)])
    kc.seek_to_beginning()
    kp = [m.value for m in kc]
    kc.close()
    assert sorted(kp) == sorted(committed)

    import asyncio

    async def aio():
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition as ATP
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False)
        await c.start()
        try:
            c.assign([ATP(topic_name, 0), ATP(topic_name, 1)])
            await c.seek_to_beginning()
            out = []
            deadline = time.monotonic() + TIMEOUT
            while len(out) < 100 and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=500)
                for msgs in batch.values():
                    out.extend(m.value for m in msgs)
            await asyncio.sleep(1.0)
            for msgs in (await c.getmany(timeout_ms=500)).values():
                out.extend(m.value for m in msgs)
            return out
        finally:
            await c.stop()
    assert sorted(asyncio.run(aio())) == sorted(committed)
    p.flush(TIMEOUT)


def test_an_open_transaction_holds_read_committed_readers_at_its_first_offset(target,
                                                                              topic_name):
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name, partitions=1)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        plain.produce(topic_name, value=b"before-%d" % i, partition=0)
    plain.flush(TIMEOUT)
    p = _txn_producer(bootstrap, f"tx-{topic_name}")
    p.begin_transaction()
    _write(p, topic_name, [b"open-%d" % i for i in range(10)], partitions=1)
    p.flush(TIMEOUT)
    for i in range(5):
        plain.produce(topic_name, value=b"after-%d" % i, partition=0)
    plain.flush(TIMEOUT)
    # read_committed stops at the open transaction's first offset (5); LSO says so too
    got = _read(bootstrap, topic_name, "read_committed", partitions=1, expect_at_least=5)
    assert got == [b"before-%d" % i for i in range(5)]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                  "isolation.level": "read_committed"})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic_name, 0), TIMEOUT)
    c.close()
    assert (lo, hi) == (0, 5)
    p.commit_transaction(TIMEOUT)
    got = _read(bootstrap, topic_name, "read_committed", partitions=1, expect_at_least=20)
    assert got == ([b"before-%d" % i for i in range(5)] + [b"open-%d" % i for i in range(10)]
                   + [b"after-%d" % i for i in range(5)])


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(target, topic_name):
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name)
    tid = f"tx-{topic_name}"
    old = _txn_producer(bootstrap, tid)
    old.begin_transaction()
    _write(old, topic_name, [b"zombie-%d" % i for i in range(20)])
    old.flush(TIMEOUT)
    new = _txn_producer(bootstrap, tid)          # aborts the zombie's open transaction
    new.begin_transaction()
    _write(new, topic_name, [b"new-%d" % i for i in range(20)])
    new.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as e:
        old.commit_transaction(TIMEOUT)
    assert e.value.args[0].fatal() or "fenc" in str(e.value).lower()
    got = _read(bootstrap, topic_name, "read_committed", expect_at_least=20)
    assert sorted(got) == sorted(b"new-%d" % i for i in range(20))


def test_a_killed_producers_transaction_is_aborted_after_its_timeout(target, topic_name):
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name, partitions=1)
    p = _txn_producer(bootstrap, f"tx-{topic_name}", **{"transaction.timeout.ms": 2000})
    p.begin_transaction()
    _write(p, topic_name, [b"lost-%d" % i for i in range(10)], partitions=1)
    p.flush(TIMEOUT)
    del p        # gone without ending its transaction (as if killed)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic_name, value=b"later", partition=0)
    plain.flush(TIMEOUT)
    # the coordinator's sweep (1 s in these tests) aborts it after 2 s; then readers move on
    got = _read(bootstrap, topic_name, "read_committed", partitions=1, expect_at_least=1,
                settle=4.0)
    assert got == [b"later"]


def test_gregors_transactional_producer_commits_and_aborts(target, topic_name):
    from gregor import Producer as GregorProducer
    from gregor.client.producer.transactions import TransactionError
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name)
    p = GregorProducer({"bootstrap.servers": bootstrap, "transactional.id": f"g-{topic_name}",
                        "linger.ms": 5})
    try:
        p.init_transactions(TIMEOUT)
        p.begin_transaction()
        for i in range(200):
            p.send(topic_name, b"c-%d" % i, partition=i % 2)
        p.send_batch(topic_name, [b"b-%d" % i for i in range(100)], partition=1)
        p.commit_transaction(TIMEOUT)
        p.begin_transaction()
        futs = [p.send(topic_name, b"a-%d" % i, partition=i % 2) for i in range(100)]
        p.flush(TIMEOUT)
        assert all(f.exception() is None for f in futs)
        p.abort_transaction(TIMEOUT)
        p.begin_transaction()
        p.send(topic_name, b"last", partition=0)
        p.commit_transaction(TIMEOUT)
        with pytest.raises(TransactionError):
            p.send(topic_name, b"outside")
        # a second instance fences this one
        p2 = GregorProducer({"bootstrap.servers": bootstrap,
                             "transactional.id": f"g-{topic_name}"})
        p2.init_transactions(TIMEOUT)
        p.begin_transaction()
        f = p.send(topic_name, b"zombie", partition=0)
        with pytest.raises(TransactionError) as e:
            p.commit_transaction(TIMEOUT)
        assert e.value.fatal
        assert f.exception() is not None
        p2.close()
    finally:
        p.close(5)
    committed = ([b"c-%d" % i for i in range(200)] + [b"b-%d" % i for i in range(100)]
                 + [b"last"])
    got = _read(bootstrap, topic_name, "read_committed", expect_at_least=301)
    assert sorted(got) == sorted(committed)
    from gregor import Consumer as GregorConsumer
    for arrow in (False, True):
        c = GregorConsumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                            "fetch.max.wait.ms": 100})
        c.assign([(topic_name, 0, -2), (topic_name, 1, -2)])
        seen, deadline = [], time.monotonic() + TIMEOUT
        while len(seen) < len(committed) and time.monotonic() < deadline:
            if arrow:
                for chunk in c.poll_batches(0.5, arrow=True):
                    seen.extend(chunk.values.to_pylist())
            else:
                seen.extend(r.value for r in c.poll(0.5))
        time.sleep(0.5)
        seen.extend(r.value for r in c.poll(0.5))
        c.close()
        assert sorted(seen) == sorted(committed), arrow


def test_kafka_python_admin_sees_and_aborts_a_stuck_transaction(target, topic_name):
    """An operator's path: list and describe transactions, find the producer holding the LSO
    (DescribeProducers), abort its transaction by hand (WriteTxnMarkers)."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP
    bootstrap = target.bootstrap
    _create(bootstrap, topic_name, partitions=1)
    tid = f"tx-{topic_name}"
    p = _txn_producer(bootstrap, tid)
    p.begin_transaction()
    _write(p, topic_name, [b"stuck-%d" % i for i in range(5)], partitions=1)
    p.flush(TIMEOUT)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = [t for ts in admin.list_transactions(state_filters=["Ongoing"]).values()
                  for t in ts]
        assert tid in {t.transactional_id for t in listed}
        d = admin.describe_transactions([tid])[tid]
        assert d.state.value == "Ongoing" and d.producer_epoch == 0
        assert d.topic_partitions == {KTP(topic_name, 0)}
        state = admin.describe_producers([KTP(topic_name, 0)])[KTP(topic_name, 0)]
        (prod,) = state.active_producers
        assert (prod.producer_id, prod.current_transaction_start_offset) == (d.producer_id, 0)
        from kafka.admin import AbortTransactionSpec
        import inspect
        spec_args = inspect.signature(AbortTransactionSpec).parameters
        kwargs = {"topic_partition": KTP(topic_name, 0), "producer_id": prod.producer_id,
                  "producer_epoch": prod.producer_epoch}
        if "coordinator_epoch" in spec_args:
            kwargs["coordinator_epoch"] = -1
        if "transaction_timeout_ms" in spec_args:
            kwargs["transaction_timeout_ms"] = 60000
        admin.abort_transaction(AbortTransactionSpec(**kwargs))
        state = admin.describe_producers([KTP(topic_name, 0)])[KTP(topic_name, 0)]
        assert state.active_producers[0].current_transaction_start_offset == -1
    finally:
        admin.close()
    # the partition is stable again: read_committed readers get nothing of it
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic_name, value=b"after", partition=0)
    plain.flush(TIMEOUT)
    assert _read(bootstrap, topic_name, "read_committed", partitions=1,
                 expect_at_least=1) == [b"after"]



def test_consume_transform_produce_commits_offsets_with_the_transaction(target, topic_name):
    """The exactly-once loop of Kafka applications: offsets committed in the producer's
    transaction (AddOffsetsToTxn + TxnOffsetCommit). An aborted batch leaves neither output nor
    offsets; a committed one both; the group's offsets stay pending (require_stable) until the
    marker, and the output holds every input exactly once."""
    bootstrap = target.bootstrap
    src, dst, group = f"{topic_name}-in", f"{topic_name}-out", f"eos-{topic_name}"
    _create(bootstrap, src)
    _create(bootstrap, dst)
    p = Producer({"bootstrap.servers": bootstrap})
    _write(p, src, [b"%d" % i for i in range(100)])
    assert p.flush(TIMEOUT) == 0

    def consumer():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed"})
        c.subscribe([src])
        return c

    def process(c, tp, n, commit):
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
        assert len(got) == n
        tp.begin_transaction()
        for m in got:
            tp.produce(dst, value=b"out-" + m.value(), partition=m.partition())
        tp.send_offsets_to_transaction(c.position(c.assignment()),
                                       c.consumer_group_metadata(), TIMEOUT)
        if commit:
            tp.commit_transaction(TIMEOUT)
        else:
            tp.abort_transaction(TIMEOUT)
        return [m.value() for m in got]

    txp = _txn_producer(bootstrap, f"eos-{topic_name}")
    c = consumer()
    done = process(c, txp, 40, commit=True)
    committed = {tp.partition: tp.offset for tp in
                 c.committed([TopicPartition(src, 0), TopicPartition(src, 1)], timeout=10)}
    assert sum(max(0, o) for o in committed.values()) == 40     # -1001: nothing committed
    process(c, txp, 30, commit=False)             # aborted: no output, offsets unchanged
    c.close()
    c = consumer()                                # a new instance restarts at the offsets
    assert {tp.partition: tp.offset for tp in c.committed(
        [TopicPartition(src, 0), TopicPartition(src, 1)], timeout=10)} == committed
    done += process(c, txp, 60, commit=True)
    c.close()
    assert sorted(done) == sorted(b"%d" % i for i in range(100))
    out = _read(bootstrap, dst, "read_committed", expect_at_least=100)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(100))
    txp.flush(1)
