"""Faults around group members: across a broker restart the member finds the coordinator again
(the broker reloads the group from __consumer_offsets) and goes on consuming from where it was,
commits made before the restart hold; a member killed with SIGKILL sends no LeaveGroup, its
session expires and the others take its partitions."""
from __future__ import annotations

import time

import pytest

from gregor.client.producer import Producer
from tests.client.consumer_group.test_group_consumer_broker import (PARTITIONS, consumer,
                                                                     new_topic, poll_until)
from tests.support.broker import BrokerProcess


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", settings={"group.initial.rebalance.delay.ms": "0",
                                                   "group.min.session.timeout.ms": "1000"})
    b.start()
    try:
        yield b
    finally:
        b.stop()


def test_member_survives_a_broker_restart(broker):
    topic = new_topic(broker, 40)
    c = consumer(broker, f"g-{topic}", **{"reconnect.backoff.max.ms": 200})
    c.subscribe([topic])
    assert len(poll_until([c], 40)) == 40
    committed = c.commit()
    broker.restart()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(8):
        p.send(topic, value=b"after%d" % i, partition=i % PARTITIONS)
    p.flush(30)
    p.close()
    seen = poll_until([c], 8, timeout=60)
    assert sorted(seen) == sorted((i % PARTITIONS, 10 + i // PARTITIONS) for i in range(8))
    assert c.committed(list(committed)) == committed
    assert len(c.commit()) == PARTITIONS
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(c.assignment()) != PARTITIONS:
        c.poll(0.1)
    assert len(c.assignment()) == PARTITIONS
    c.close()


def test_killed_member_expires_and_the_other_takes_over(broker, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    topic = new_topic(broker, 0)
    group = f"g-{topic}"
    script = (
        "import sys, time\n"
        "from gregor import Consumer\n"
        f"c = Consumer({{'bootstrap.servers': '{broker.bootstrap}', 'group.id': '{group}',"
        " 'session.timeout.ms': 1500, 'heartbeat.interval.ms': 200})\n"
        f"c.subscribe(['{topic}'])\n"
        "while not c.assignment():\n"
        "    c.poll(0.1)\n"
        "print('assigned', flush=True)\n"
        "while True:\n"
        "    c.poll(0.1)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.getcwd()}, text=True)
    try:
        assert proc.stdout.readline().strip() == "assigned"
        c = consumer(broker, group, **{"session.timeout.ms": 1500,
                                       "heartbeat.interval.ms": 200})
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.1)
        assert 0 < len(c.assignment()) < PARTITIONS
        proc.send_signal(signal.SIGKILL)            # no LeaveGroup: its session must expire
        while len(c.assignment()) < PARTITIONS and time.monotonic() < deadline:
            c.poll(0.1)
        assert len(c.assignment()) == PARTITIONS
        c.close()
    finally:
        proc.kill()
        proc.wait()
