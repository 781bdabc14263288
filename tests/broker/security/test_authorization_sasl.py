"""End to end with authenticated principals, as Kafka's EndToEndAuthorizationTest (and its
SASL_PLAINTEXT variant): alice and bob log in with SASL/PLAIN, admin is a super user who
manages the ACLs; produce and consume with literal, wildcard and prefixed ACLs, no produce
with DESCRIBE only, no consume without READ, no group ACL -> GroupAuthorizationException, and
one principal's ACLs never open the topic to another."""
from __future__ import annotations

import time
import uuid

import pytest

from gregor.client.admin import AdminClient
from gregor.client.admin_acls import acl_binding, acl_filter
from gregor.protocol.errors import ClusterAuthorizationFailedError
from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("sasl-authz") / "data", settings={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"})
    b.start()
    try:
        yield b
    finally:
        b.stop()


def sasl(user: str) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user]}


@pytest.fixture
def admin(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap, **sasl("admin")})
    yield a
    a.delete_acls([acl_filter("topic"), acl_filter("group")])
    a.close()


def grant(admin, user, rtype, name, *ops, pattern="literal"):
    admin.create_acls([acl_binding(rtype, name, pattern, f"User:{user}", "*", op, "allow")
                       for op in ops])


def topic(admin) -> str:
    name = "e2e-" + uuid.uuid4().hex[:8]
    admin.create_topics([name])
    return name


def produce(broker, user, t, n=3):
    """(error codes, number delivered) as `user`."""
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 5000,
                     **sasl(user)})
    errors, ok = [], []
    for i in range(n):
        p.produce(t, b"v%d" % i, on_delivery=lambda err, msg: (
            errors.append(err.code()) if err else ok.append(msg.offset())))
    p.flush(15)
    return errors, len(ok)


def consume(broker, user, t, group, n=3, timeout=20.0):
    """(values read, the first error code) as `user` in `group`."""
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", **sasl(user)})
    got, error = [], None
    try:
        c.subscribe([t])
        deadline = time.monotonic() + timeout
        while len(got) < n and error is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                error = m.error().code()
            else:
                got.append(m.value())
    finally:
        c.close()
    return got, error


@pytest.mark.parametrize("style", ["literal", "wildcard", "prefixed"])
def test_produce_consume_with_acls(broker, admin, style):
    t = topic(admin)
    group = "grp-" + uuid.uuid4().hex[:6]
    name, g, pattern = {"literal": (t, group, "literal"), "wildcard": ("*", "*", "literal"),
                        "prefixed": ("e2e-", "grp-", "prefixed")}[style]
    grant(admin, "alice", "topic", name, "write", "read", "describe", pattern=pattern)
    grant(admin, "alice", "group", g, "read", pattern=pattern)
    assert produce(broker, "alice", t) == ([], 3)
    got, error = consume(broker, "alice", t, group)
    assert error is None and sorted(got) == [b"v0", b"v1", b"v2"]
    # bob is another principal: alice's ACLs do not open the topic to him
    errors, delivered = produce(broker, "bob", t, 1)
    assert delivered == 0 and errors == [ck.KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_no_produce_with_describe_acl(broker, admin):
    t = topic(admin)
    grant(admin, "alice", "topic", t, "describe")
    errors, delivered = produce(broker, "alice", t)
    assert delivered == 0 and set(errors) == {ck.KafkaError.TOPIC_AUTHORIZATION_FAILED}


def test_no_consume_without_read(broker, admin):
    t = topic(admin)
    assert produce(broker, "admin", t) == ([], 3)
    grant(admin, "alice", "group", "g-noread", "read")
    got, error = consume(broker, "alice", t, "g-noread")
    assert got == [] and error == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_no_group_acl(broker, admin):
    errors_mod = pytest.importorskip("kafka.errors")
    t = topic(admin)
    assert produce(broker, "admin", t) == ([], 3)
    grant(admin, "alice", "topic", t, "read", "describe")
    c = kafka.KafkaConsumer(t, bootstrap_servers=broker.bootstrap, group_id="no-acl-group",
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username="alice", sasl_plain_password="alice-secret",
                            auto_offset_reset="earliest", request_timeout_ms=10000)
    try:
        with pytest.raises(errors_mod.GroupAuthorizationFailedError):
            c.poll(timeout_ms=10000)
    finally:
        c.close()


def test_only_the_super_user_manages_acls(broker, admin):
    with AdminClient({"bootstrap.servers": broker.bootstrap, **sasl("alice")}) as a:
        with pytest.raises(ClusterAuthorizationFailedError):
            a.create_acls([acl_binding("topic", "x", "literal", "User:alice", "*", "all",
                                       "allow")])
    grant(admin, "alice", "cluster", "kafka-cluster", "alter")
    with AdminClient({"bootstrap.servers": broker.bootstrap, **sasl("alice")}) as a:
        a.create_acls([acl_binding("topic", "x", "literal", "User:bob", "*", "read", "allow")])
        assert [b.entry.principal for b in a.describe_acls(acl_filter("topic", "x"))] == \
            ["User:bob"]
    admin.delete_acls([acl_filter("cluster")])


def test_cli_manages_acls_as_the_super_user_with_command_config(broker, admin, tmp_path):
    from tests.broker.security.test_acls_network import gregor
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                     'required username="admin" password="admin-secret";\n')
    b = ["-b", broker.bootstrap, "--command-config", str(props)]
    gregor("acls", "add", "--allow-principal", "User:alice", "--operation", "Read",
           "--topic", "cli-sasl", *b)
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in \
        gregor("acls", "list", "--topic", "cli-sasl", *b).stdout
    alice = tmp_path / "alice.properties"
    alice.write_text(props.read_text().replace("admin", "alice"))
    denied = gregor("acls", "list", "-b", broker.bootstrap, "--command-config", str(alice),
                    check=False)
    assert denied.returncode != 0 and "may not DESCRIBE the cluster" in denied.stderr
