"""Real clients against gregor's TLS and SASL listeners: confluent-kafka (librdkafka 2.16:
SCRAM-SHA-256/512 and PLAIN over SASL_SSL and SASL_PLAINTEXT, mTLS, the SCRAM admin calls),
kafka-python (SCRAM over SASL_SSL, PLAIN with authzid, the SCRAM admin calls), aiokafka and
kcat (librdkafka 2.0.2, which repeats its nonce in SCRAM's client-final). Wrong passwords and
disabled mechanisms are refused to every one of them."""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid

import pytest

from tests.support.secure_broker import USERS, start_secure_broker

pytestmark = pytest.mark.interop

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
N = 200


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(tmp_path_factory.mktemp("interop-secure"))
    try:
        yield broker
    finally:
        broker.stop()


def topic() -> str:
    return f"sec-{uuid.uuid4().hex[:10]}"


def rdkafka_conf(b, listener: str, mechanism: str | None = None, user="alice",
                 password=None) -> dict:
    conf = {"bootstrap.servers": f"localhost:{b.listeners[listener]}",
            "security.protocol": listener}
    if "SSL" in listener:
        conf["ssl.ca.location"] = str(b.pki.ca_pem)
    if mechanism:
        conf.update({"sasl.mechanisms": mechanism, "sasl.username": user,
                     "sasl.password": USERS[user] if password is None else password})
    return conf


def confluent_roundtrip(conf: dict) -> None:
    from confluent_kafka import Consumer, Producer
    t = topic()
    p = Producer({**conf, "enable.idempotence": True})
    for i in range(N):
        p.produce(t, b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": t, "auto.offset.reset": "earliest"})
    c.subscribe([t])
    got = []
    try:
        while len(got) < N:
            m = c.poll(30)
            assert m is not None, f"only {len(got)} of {N} records came back"
            assert m.error() is None, m.error()
            got.append(m.value())
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(N)]


@pytest.mark.parametrize("listener", ["SASL_SSL", "SASL_PLAINTEXT"])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_confluent_kafka_sasl(b, listener, mechanism):
    confluent_roundtrip(rdkafka_conf(b, listener, mechanism))


def test_confluent_kafka_oauthbearer_unsecured_jwt(b):
    conf = rdkafka_conf(b, "SASL_SSL")
    conf.update({"sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                 "sasl.oauthbearer.config": "principal=alice lifeSeconds=600"})
    confluent_roundtrip(conf)


def test_confluent_kafka_mtls(b):
    cert, key = b.pki.client("rdkafka-client")
    confluent_roundtrip({**rdkafka_conf(b, "SSL"), "ssl.certificate.location": str(cert),
                         "ssl.key.location": str(key)})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_confluent_kafka_wrong_password_is_refused(b, mechanism):
    from confluent_kafka import KafkaError, Producer
    errors = []
    p = Producer({**rdkafka_conf(b, "SASL_SSL", mechanism, password="not-it"),
                  "error_cb": errors.append})
    for _ in range(100):
        p.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, f"no authentication error reported: {errors}"
    assert "not-it" not in auth[0].str()


def test_confluent_kafka_scram_admin_calls(b):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion,
                                       UserScramCredentialUpsertion)
    admin = AdminClient(rdkafka_conf(b, "SASL_SSL", "SCRAM-SHA-512"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("rdk-user", info, b"rdk-pw")]).values():
        f.result(30)
    described = admin.describe_user_scram_credentials(["rdk-user"])
    desc = described["rdk-user"].result(30)
    assert [(i.mechanism, i.iterations) for i in desc.scram_credential_infos] == \
        [(ScramMechanism.SCRAM_SHA_256, 8192)]
    confluent_roundtrip(rdkafka_conf(b, "SASL_PLAINTEXT", "SCRAM-SHA-256", user="alice") |
                        {"sasl.username": "rdk-user", "sasl.password": "rdk-pw"})
    for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion(
            "rdk-user", ScramMechanism.SCRAM_SHA_256)]).values():
        f.result(30)
    with pytest.raises(Exception):
        admin.describe_user_scram_credentials(["rdk-user"])["rdk-user"].result(30)


def kafka_python_conf(b, listener, mechanism, user="bob", password=None):
    conf = {"bootstrap_servers": f"localhost:{b.listeners[listener]}",
            "security_protocol": listener, "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": USERS[user] if password is None else password}
    if "SSL" in listener:
        conf["ssl_cafile"] = str(b.pki.ca_pem)
    return conf


@pytest.mark.parametrize("listener, mechanism", [("SASL_SSL", "SCRAM-SHA-512"),
                                                 ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
                                                 ("SASL_SSL", "PLAIN")])
def test_kafka_python(b, listener, mechanism):
    import kafka
    conf = kafka_python_conf(b, listener, mechanism)
    t = topic()
    p = kafka.KafkaProducer(**conf)
    for i in range(N):
        p.send(t, b"kp%d" % i)
    p.flush(30)
    p.close()
    c = kafka.KafkaConsumer(t, auto_offset_reset="earliest", consumer_timeout_ms=30000, **conf)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == N:
            break
    c.close()
    assert got == [b"kp%d" % i for i in range(N)]


def test_kafka_python_scram_admin_calls(b):
    import kafka
    from kafka.admin._users import UserScramCredentialUpsertion
    admin = kafka.KafkaAdminClient(**kafka_python_conf(b, "SASL_SSL", "SCRAM-SHA-512"))
    try:
        assert admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "kp-user", "SCRAM-SHA-512", "kp-pw", iterations=4096)]) == {"kp-user": None}
        got = admin.describe_user_scram_credentials(["kp-user", "nobody"])
        assert got["kp-user"]["error"] is None
        assert [(int(i["mechanism"]), i["iterations"])
                for i in got["kp-user"]["credential_infos"]] == [(2, 4096)]
        assert "does not exist" in got["nobody"]["error"]
    finally:
        admin.close()
    kafka.KafkaAdminClient(**kafka_python_conf(b, "SASL_SSL", "SCRAM-SHA-512", user="bob")
                           | {"sasl_plain_username": "kp-user",
                              "sasl_plain_password": "kp-pw"}).close()


def test_aiokafka(b):
    import aiokafka
    from aiokafka.helpers import create_ssl_context
    t = topic()

    async def run():
        conf = {"bootstrap_servers": f"localhost:{b.listeners['SASL_SSL']}",
                "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "alice", "sasl_plain_password": USERS["alice"],
                "ssl_context": create_ssl_context(cafile=str(b.pki.ca_pem))}
        p = aiokafka.AIOKafkaProducer(**conf)
        await p.start()
        try:
            for i in range(N):
                await p.send(t, b"ai%d" % i)
            await p.flush()
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(t, auto_offset_reset="earliest", **conf)
        await c.start()
        got = []
        try:
            while len(got) < N:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 30)
                for records in batch.values():
                    got += [r.value for r in records]
        finally:
            await c.stop()
        return got
    assert asyncio.run(run()) == [b"ai%d" % i for i in range(N)]


def test_aiokafka_wrong_password_is_refused(b):
    import aiokafka
    from aiokafka.errors import KafkaError

    async def run():
        p = aiokafka.AIOKafkaProducer(
            bootstrap_servers=f"localhost:{b.listeners['SASL_PLAINTEXT']}",
            security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice", sasl_plain_password="wrong-pw-ai")
        try:
            await p.start()
        finally:
            await p.stop()
    with pytest.raises(KafkaError) as e:
        asyncio.run(asyncio.wait_for(run(), 30))
    assert "wrong-pw-ai" not in str(e.value)


@pytest.mark.skipif(KCAT is None, reason="the kcat binary is not installed "
                                         "(apt-get install kcat; .ci/run installs it in CI)")
def test_kcat_scram_with_the_repeated_nonce_of_librdkafka_2_0(b):
    t = topic()
    args = ["-b", f"localhost:{b.listeners['SASL_SSL']}", "-X", "security.protocol=SASL_SSL",
            "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice",
            "-X", f"sasl.password={USERS['alice']}", "-X", f"ssl.ca.location={b.pki.ca_pem}",
            "-m", "30"]
    lines = b"".join(b"k%d\tv%d\n" % (i, i) for i in range(N))
    out = subprocess.run(["kcat", *args, "-P", "-t", t, "-K", "\t"], input=lines,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    out = subprocess.run(["kcat", *args, "-C", "-t", t, "-e", "-o", "beginning", "-f", "%s\n"],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == [f"v{i}" for i in range(N)]
    bad = [a if not a.startswith("sasl.password=") else "sasl.password=wrong" for a in args]
    bad[bad.index("30")] = "3"               # librdkafka retries until the metadata timeout
    out = subprocess.run(["kcat", *bad, "-L"], capture_output=True, timeout=60)
    assert out.returncode != 0
    assert b"Authentication failed during authentication due to invalid credentials" in out.stderr
