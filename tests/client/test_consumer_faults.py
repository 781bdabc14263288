"""The consumer across a broker restart: it reconnects, refreshes metadata and carries on from
its position, with nothing skipped and nothing read twice."""
from __future__ import annotations

import time

import pytest

from gregor import Consumer

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

pytestmark = pytest.mark.interop


def _produce(bootstrap, topic, values):
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for v in values:
        p.produce(topic, value=v, partition=0)
    assert p.flush(30) == 0


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "kill-9"])
def test_consumer_survives_a_broker_restart(broker, hard):
    topic = "restart"
    a = admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in a.create_topics([admin_mod.NewTopic(topic, 1, 1)]).values():
        f.result(30)
    _produce(broker.bootstrap, topic, [b"a%d" % i for i in range(100)])
    conf = {"bootstrap.servers": broker.bootstrap, "fetch.max.wait.ms": 100,
            "max.poll.records": 30, "reconnect.backoff.max.ms": 200}
    got = []
    with Consumer(conf) as c:
        c.assign([(topic, 0, 0)])
        deadline = time.monotonic() + 20
        while len(got) < 60 and time.monotonic() < deadline:
            got += c.poll(0.5)
        broker.restart(hard=hard)
        # With kill -9 only flushed data survives; write more after the restart either way.
        _produce(broker.bootstrap, topic, [b"b%d" % i for i in range(50)])
        with Consumer({"bootstrap.servers": broker.bootstrap}) as probe:
            end = probe.end_offsets([(topic, 0)])[(topic, 0)]
        deadline = time.monotonic() + 60
        while (not got or got[-1].offset < end - 1) and time.monotonic() < deadline:
            got += c.poll(0.5)
    offsets = [r.offset for r in got]
    assert offsets == list(range(end)), "records were skipped or repeated across the restart"
    assert got[-1].value == b"b49"
