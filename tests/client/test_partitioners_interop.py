"""librdkafka (through confluent-kafka) produces with each of its partitioners to a broker; for
every key, gregor's partitioner of the same name must pick the partition librdkafka picked."""
from __future__ import annotations

import os
import random

import pytest

from gregor.client.producer.partitioners import get_partitioner

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.interop

PARTITIONS = 7
# None and empty keys only where librdkafka maps them deterministically.
DETERMINISTIC_EMPTY = {"consistent": [None, b""], "murmur2": [None, b""], "fnv1a": [None, b""],
                       "murmur2_random": [b""], "fnv1a_random": [b""], "consistent_random": []}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC_EMPTY))
def test_librdkafka_partitioner_agrees_with_ours(name, client_broker, new_topic):
    topic = new_topic(PARTITIONS)
    rng = random.Random(name)
    keys = [os.urandom(rng.randrange(1, 24)) for _ in range(150)]
    keys += [f"user-{i}".encode() for i in range(50)] + DETERMINISTIC_EMPTY[name]
    landed = {}

    def report(err, msg):
        assert err is None, err
        landed[len(landed)] = (msg.key(), msg.partition())

    p = confluent_kafka.Producer({"bootstrap.servers": client_broker.bootstrap,
                                  "partitioner": name, "linger.ms": 5})
    for key in keys:
        p.produce(topic, value=b"v", key=key, on_delivery=report)
    assert p.flush(30) == 0
    assert len(landed) == len(keys)
    ours = get_partitioner(name)
    mismatches = [(k, part, ours(topic, k, b"v", PARTITIONS, list(range(PARTITIONS))))
                  for k, part in landed.values()
                  if ours(topic, k, b"v", PARTITIONS, list(range(PARTITIONS))) != part]
    assert not mismatches
    # the keys really spread over the partitions (the test would be weak otherwise)
    assert len({part for _, part in landed.values()}) == PARTITIONS
