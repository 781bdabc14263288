"""gregor's Producer, Consumer and AdminClient (and the Spark source and sink code paths,
configured through kafka.-prefixed options) against a broker with TLS and SASL listeners:
every protocol and mechanism, host name verification, failures that surface at once with a
message saying what to check, and re-authentication before the session ends (KIP-368)."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from gregor.client.admin import (AdminClient, UserScramCredentialDeletion,
                                 UserScramCredentialUpsertion)
from gregor.client.consumer import Consumer
from gregor.client.errors import AuthenticationError
from gregor.client.producer import Producer
from tests.support.secure_broker import USERS, start_secure_broker

pytestmark = pytest.mark.interop
N = 500


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(
        tmp_path_factory.mktemp("client-secure"), extra_args=["--log-level", "DEBUG"],
        extra_listeners=["REAUTH"],
        **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
           "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_SSL",
           "listener.name.reauth.sasl.enabled.mechanisms": "SCRAM-SHA-512",
           "listener.name.reauth.connections.max.reauth.ms": "1500"})
    try:
        yield broker
    finally:
        broker.stop()


def conf(b, listener, mechanism=None, user="alice", password=None, **extra) -> dict:
    out = {"bootstrap.servers": f"localhost:{b.listeners[listener]}",
           "security.protocol": "SASL_SSL" if listener == "REAUTH" else listener}
    if "SSL" in out["security.protocol"]:
        out["ssl.ca.location"] = str(b.pki.ca_pem)
    if mechanism:
        out.update({"sasl.mechanism": mechanism, "sasl.username": user,
                    "sasl.password": USERS.get(user, "") if password is None else password})
    out.update(extra)
    return out


def roundtrip(config: dict, n: int = N) -> None:
    topic = f"gsec-{uuid.uuid4().hex[:10]}"
    with AdminClient(config) as admin:
        admin.create_topics([topic], num_partitions=2)
    p = Producer(config)
    for i in range(n):
        p.send(topic, b"r%d" % i, key=b"k%d" % (i % 7))
    p.flush(30)
    p.close()
    c = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        got += [r.value for r in c.poll(1.0)]
    c.close()
    assert sorted(got) == sorted(b"r%d" % i for i in range(n))


@pytest.mark.parametrize("listener, mechanism", [
    ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256")])
def test_sasl(b, listener, mechanism):
    roundtrip(conf(b, listener, mechanism))


def test_java_style_jaas_and_truststore(b):
    """What Spark passes from kafka.* options: Java names only."""
    roundtrip({"bootstrap.servers": f"localhost:{b.listeners['SASL_SSL']}",
               "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
               "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                                   f'required username="bob" password="{USERS["bob"]}";',
               "ssl.truststore.type": "PEM", "ssl.truststore.location": str(b.pki.ca_pem)}, 50)


def test_oauthbearer_with_short_tokens_re_authenticates(b):
    """Tokens of 2 s: the session ends with the token, the client logs in again with a new
    one on the same connection."""
    config = {"bootstrap.servers": f"localhost:{b.listeners['SASL_SSL']}",
              "security.protocol": "SASL_SSL", "ssl.ca.location": str(b.pki.ca_pem),
              "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
              "sasl.oauthbearer.config": "principal=olga lifeSeconds=2"}
    with AdminClient(config) as admin:
        for _ in range(8):
            admin.list_topics(timeout=10)
            time.sleep(0.5)
    deadline = time.monotonic() + 5
    while b.output().count("authenticated as User:olga (SASL/OAUTHBEARER)") < 2 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b.output().count("authenticated as User:olga (SASL/OAUTHBEARER)") >= 2


def test_facades_share_the_secure_network_layer(b):
    """sarama-shaped and kafka-go-shaped producers, and the asyncio consumer, on SASL_SSL."""
    import asyncio

    from gregor.client.consumer.asyncio_consumer import AsyncioConsumer
    from gregor.client.producer.sarama import ProducerMessage, SyncProducer
    from gregor.client.producer.writer import Message, Writer
    config = conf(b, "SASL_SSL", "SCRAM-SHA-256")
    topic = f"facade-{uuid.uuid4().hex[:8]}"
    with AdminClient(config) as admin:
        admin.create_topics([topic])
    sp = SyncProducer(config)
    assert sp.send_message(ProducerMessage(topic, value=b"sarama"))[1] == 0
    sp.close()
    w = Writer(topic=topic, config=config)
    w.write_messages(Message(value=b"kafka-go"))
    w.close()

    async def read():
        c = AsyncioConsumer({**config, "auto.offset.reset": "earliest"})
        await c.assign([(topic, 0, 0)])
        got = []
        try:
            while len(got) < 2:
                got += [r.value for r in await c.poll(1.0)]
        finally:
            await c.close()
        return got
    assert asyncio.run(asyncio.wait_for(read(), 30)) == [b"sarama", b"kafka-go"]


def test_mtls(b):
    cert, key = b.pki.client("gregor-client")
    roundtrip(conf(b, "SSL", **{"ssl.certificate.location": str(cert),
                                "ssl.key.location": str(key)}), 50)


def test_host_name_verification_is_on_by_default(b):
    """The broker's certificate names localhost only: 127.0.0.1 fails unless turned off."""
    by_ip = conf(b, "SASL_SSL", "PLAIN")
    by_ip["bootstrap.servers"] = f"127.0.0.1:{b.listeners['SASL_SSL']}"
    with AdminClient(by_ip) as admin:
        with pytest.raises(AuthenticationError, match="TLS handshake .* failed.*"
                                                      "ssl.endpoint.identification.algorithm"):
            admin.list_topics(timeout=10)
    with AdminClient({**by_ip, "ssl.endpoint.identification.algorithm": ""}) as admin:
        admin.list_topics(timeout=10)


@pytest.mark.parametrize("make", ["admin", "consumer", "producer"])
def test_wrong_password_fails_at_once_without_showing_it(b, make):
    bad = conf(b, "SASL_PLAINTEXT", "SCRAM-SHA-512", password="wrong-pw-g1")
    started = time.monotonic()
    with pytest.raises(AuthenticationError) as e:
        if make == "admin":
            with AdminClient(bad) as admin:
                admin.list_topics(timeout=20)
        elif make == "consumer":
            c = Consumer({**bad, "group.id": "g"})
            try:
                c.subscribe(["x"])
                c.poll(20)
            finally:
                c.close()
        else:
            p = Producer({**bad, "max.block.ms": 20000})
            try:
                p.send("x", b"v")
            finally:
                p.close(0)
    assert time.monotonic() - started < 10
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(e.value)
    assert "wrong-pw-g1" not in str(e.value) and "wrong-pw-g1" not in repr(e.value)


def test_disabled_mechanism_names_the_offered_ones(b):
    with AdminClient(conf(b, "REAUTH", "PLAIN")) as admin:
        with pytest.raises(AuthenticationError, match="offers SCRAM-SHA-512"):
            admin.list_topics(timeout=10)


def test_admin_scram_calls(b):
    with AdminClient(conf(b, "SASL_SSL", "SCRAM-SHA-512")) as admin:
        admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("gina", "SCRAM-SHA-256", "gina-pw", iterations=8192),
            UserScramCredentialUpsertion("gina", "SCRAM-SHA-512", "gina-pw")])
        got = admin.describe_user_scram_credentials(["gina"])
        assert [(i.mechanism, i.iterations) for i in got["gina"]] == \
            [("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096)]
        assert "gina" in admin.describe_user_scram_credentials()
        with pytest.raises(Exception, match="Too few iterations"):
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("gina", "SCRAM-SHA-256", "x", iterations=10)])
    roundtrip(conf(b, "SASL_PLAINTEXT", "SCRAM-SHA-256", user="gina", password="gina-pw"), 20)
    with AdminClient(conf(b, "SASL_SSL", "SCRAM-SHA-512")) as admin:
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("gina", "SCRAM-SHA-256")])
        with pytest.raises(Exception, match="does not exist"):
            admin.describe_user_scram_credentials(["nobody"])


def test_reauthentication_keeps_long_lived_connections(b):
    """Sessions of 1.5 s: a consumer polling for 4 s re-authenticates on its connections
    instead of being cut off."""
    config = conf(b, "REAUTH", "SCRAM-SHA-512")
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    with AdminClient(config) as admin:
        admin.create_topics([topic])
    p = Producer(config)
    c = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, sent = 0, 0
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline:
        p.send(topic, b"x")
        sent += 1
        p.flush(10)
        got += len(c.poll(0.2))
    end = time.monotonic() + 10
    while got < sent and time.monotonic() < end:
        got += len(c.poll(0.5))
    c.close()
    p.close()
    assert got == sent
    pattern = (r"connection from (127\.0\.0\.1:\d+) authenticated as User:alice "
               r"\(SASL/SCRAM-SHA-512\); session ends")
    deadline = time.monotonic() + 5           # the broker's log lines arrive through a pipe
    while True:
        peers = re.findall(pattern, b.output())
        if any(peers.count(peer) >= 2 for peer in set(peers)) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert any(peers.count(peer) >= 2 for peer in set(peers)), \
        f"no connection re-authenticated on the REAUTH listener: {peers}"
    assert "after its SASL session expired" not in b.output()


def test_spark_source_and_sink_paths_with_kafka_prefixed_options(b):
    """The executors' code of the gregor data source, configured as a Spark job would be."""
    import pyarrow as pa

    from gregor.spark.client import RecordWriter, TopicMetadata, read_range
    from gregor.spark.offsets import OffsetRange
    from gregor.spark.options import Subscription, client_config
    options = {"kafka.bootstrap.servers": f"localhost:{b.listeners['SASL_SSL']}",
               "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
               "kafka.sasl.jaas.config":
                   'org.apache.kafka.common.security.scram.ScramLoginModule required '
                   f'username="alice" password="{USERS["alice"]}";',
               "kafka.ssl.truststore.location": str(b.pki.ca_pem),
               "kafka.ssl.truststore.type": "PEM", "subscribe": "ignored"}
    config = client_config(options)
    topic = f"spark-sec-{uuid.uuid4().hex[:8]}"
    writer = RecordWriter(config, topic)
    writer.write(pa.record_batch({"value": pa.array([b"s%d" % i for i in range(100)])}))
    assert writer.close() == 100
    md = TopicMetadata(config)
    try:
        tps = md.partitions(Subscription("subscribe", topics=(topic,)))
        latest = md.latest(tps)
    finally:
        md.close()
    rows = 0
    for tp in tps:
        for batch in read_range(config, OffsetRange(tp[0], tp[1], 0, latest[tp]),
                                include_headers=False, fail_on_data_loss=True,
                                poll_timeout_ms=30000):
            rows += batch.num_rows
    assert rows == 100
