"""The workloads against a secured broker (SASL_SSL, SCRAM-SHA-256): each library's own
TLS and SASL settings pass through `extra` unchanged."""
from __future__ import annotations

import uuid

import pytest

from gregor.testing.history import History, check, key
from gregor.testing.history.workloads import workload
from tests.support.secure_broker import USERS, start_secure_broker

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    b = start_secure_broker(tmp_path_factory.mktemp("history-secure"))
    try:
        yield b
    finally:
        b.stop()


def settings(b, client: str) -> dict:
    ca, user, password = str(b.pki.ca_pem), "alice", USERS["alice"]
    if client in ("confluent-kafka", "gregor"):
        return {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
                "sasl.username": user, "sasl.password": password, "ssl.ca.location": ca}
    common = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
              "sasl_plain_username": user, "sasl_plain_password": password}
    if client == "kafka-python":
        return {**common, "ssl_cafile": ca}
    from aiokafka.helpers import create_ssl_context
    return {**common, "ssl_context": create_ssl_context(cafile=ca)}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka", "gregor"])
def test_a_workload_runs_clean_on_a_secured_listener(secured, client):
    from confluent_kafka.admin import AdminClient, NewTopic
    bootstrap = f"localhost:{secured.listeners['SASL_SSL']}"
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **settings(secured, "confluent-kafka")})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    h = History()
    w = workload(client, bootstrap, [key(topic, p) for p in range(2)], h, seed=2,
                 extra=settings(secured, client))
    w.run(clients=1, ops=5)
    w.final_read(timeout=60)
    report = check(h)
    assert report.valid, report.summary()
    assert report.counts["send"].get("ok", 0) > 0, report.summary()
