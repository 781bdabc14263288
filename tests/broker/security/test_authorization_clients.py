"""Real clients against a broker with an authorizer (PLAINTEXT, so they are User:ANONYMOUS):
they get Kafka's authorization errors as their own exceptions, and work once the ACLs are
there (EndToEndAuthorizationTest's testNoProduceWithDescribeAcl, testNoConsumeWithoutDescribeAcl,
testNoGroupAcl, and produce/consume with literal and prefixed ACLs).

The ACL that lets the test manage ACLs and topics (ANONYMOUS may ALTER and CREATE on the
cluster) is created offline before the broker starts."""
from __future__ import annotations

import time
import uuid

import pytest

from gregor.client.admin import AdminClient
from gregor.client.admin_acls import acl_binding, acl_filter
from tests.broker.security.test_acls_network import AUTHZ, gregor
from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    data = tmp_path_factory.mktemp("authz-clients") / "data"
    gregor("acls", "add", "--allow-principal", "User:ANONYMOUS", "--operation", "Alter",
           "--operation", "Create", "--cluster", "--data-dir", str(data))
    b = BrokerProcess(data, settings={**AUTHZ, "group.initial.rebalance.delay.ms": "0",
                                      "offsets.topic.num.partitions": "1"})
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def admin(secured):
    a = AdminClient({"bootstrap.servers": secured.bootstrap})
    yield a
    a.delete_acls([acl_filter("topic"), acl_filter("group")])
    a.close()


def allow(admin, rtype, name, *ops, pattern="literal"):
    admin.create_acls([acl_binding(rtype, name, pattern, "User:ANONYMOUS", "*", op, "allow")
                       for op in ops])


def new_topic(admin) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    admin.create_topics([name])
    return name


def ck_produce(bootstrap, topic, **extra):
    """(error codes of the deliveries, number delivered)."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 5000, **extra})
    errors, ok = [], []
    for i in range(3):
        p.produce(topic, b"v%d" % i, on_delivery=lambda err, msg: (
            errors.append(err.code()) if err else ok.append(msg.offset())))
    p.flush(15)
    return errors, len(ok)


def test_no_produce_with_describe_only_then_produce_with_write(secured, admin):
    t = new_topic(admin)
    allow(admin, "topic", t, "describe")
    errors, delivered = ck_produce(secured.bootstrap, t)
    assert delivered == 0 and set(errors) == {ck.KafkaError.TOPIC_AUTHORIZATION_FAILED}
    allow(admin, "topic", t, "write")
    assert ck_produce(secured.bootstrap, t) == ([], 3)


def test_prefixed_acls_let_a_producer_and_consumer_work(secured, admin):
    t = new_topic(admin)
    allow(admin, "topic", t[:4], "write", "read", pattern="prefixed")
    allow(admin, "group", "grp-", "read", pattern="prefixed")
    assert ck_produce(secured.bootstrap, t) == ([], 3)
    c = ck.Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "grp-1",
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        c.subscribe([t])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m.value())
        assert sorted(got) == [b"v0", b"v1", b"v2"]
        c.commit(asynchronous=False)
    finally:
        c.close()


def test_no_consume_without_read(secured, admin):
    t = new_topic(admin)
    allow(admin, "topic", t, "write", "describe")
    allow(admin, "group", "g-noread", "read")
    assert ck_produce(secured.bootstrap, t) == ([], 3)
    c = ck.Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "g-noread",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(t, 0, 0)])
        deadline = time.monotonic() + 20
        error = None
        while error is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is not None:
                error = m.error().code()
            assert m is None or m.error() is not None, "a record was read without READ"
        assert error == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        c.close()


def test_kafka_python_group_and_topic_authorization_errors(secured, admin):
    errors = pytest.importorskip("kafka.errors")
    t = new_topic(admin)
    allow(admin, "topic", t, "read", "write")
    # kafka-python's producer is idempotent by default: WRITE on a topic is enough for its
    # InitProducerId (KIP-679), no IDEMPOTENT_WRITE on the cluster needed
    p = kafka.KafkaProducer(bootstrap_servers=secured.bootstrap, request_timeout_ms=10000)
    p.send(t, b"x").get(timeout=20)
    p.close()
    c = kafka.KafkaConsumer(t, bootstrap_servers=secured.bootstrap, group_id="no-acl-group",
                            auto_offset_reset="earliest", consumer_timeout_ms=10000,
                            request_timeout_ms=10000)
    try:
        with pytest.raises(errors.GroupAuthorizationFailedError):
            c.poll(timeout_ms=10000)
    finally:
        c.close()
    closed = new_topic(admin)
    allow(admin, "topic", closed, "describe")
    c = kafka.KafkaConsumer(bootstrap_servers=secured.bootstrap, consumer_timeout_ms=5000,
                            request_timeout_ms=10000, auto_offset_reset="earliest")
    try:
        c.assign([kafka.TopicPartition(closed, 0)])
        with pytest.raises(errors.TopicAuthorizationFailedError):
            c.poll(timeout_ms=5000)
            c.poll(timeout_ms=5000)
    finally:
        c.close()
