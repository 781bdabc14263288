"""gregor.testing with share groups: faults pushed on the share APIs reach the client (gregor's
ShareConsumer re-finds its coordinator, opens a new share session, and still gets every
record once), and the manual clock expires an acquisition lock without waiting for it."""
import time

from gregor.client.consumer.share import ShareConsumer
from gregor.testing import Broker

WAIT_S = 60          # liveness bound only


def _topic_with_started_group(b, name, group):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    a.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    c = ShareConsumer(group, b.bootstrap_servers)
    c.subscribe([name])
    deadline = time.monotonic() + WAIT_S
    while not any(k[0] == group for k in b.broker.share.partitions):
        assert time.monotonic() < deadline
        assert c.poll(0.1) == []
    return c


def _produce(b, name, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    for i in range(n):
        p.produce(name, value=b"%d" % i)
    assert p.flush(30) == 0


def test_faults_on_share_apis_are_survived():
    with Broker() as b:
        c = _topic_with_started_group(b, "faulted", "fg")
        try:
            hb = b.faults.push("ShareGroupHeartbeat", "NOT_COORDINATOR")
            sf = b.faults.push("ShareFetch", ["SHARE_SESSION_NOT_FOUND"])
            _produce(b, "faulted", 20)
            seen = []
            deadline = time.monotonic() + WAIT_S
            while len(seen) < 20 and time.monotonic() < deadline:
                c._next_heartbeat = 0.0            # heartbeat now, into the pushed fault
                seen += [r.offset for r in c.poll(0.2)]
            assert sorted(seen) == list(range(20))
            assert sf.fired == 1 and hb.fired == 1
            epochs = [r["share_session_epoch"] for r in b.requests("ShareFetch")]
            assert any(e == 0 and before > 0 for before, e in zip(epochs, epochs[1:])), \
                epochs                               # a new session after the lost one
        finally:
            c.close()


def test_the_manual_clock_expires_a_lock():
    with Broker(clock="manual") as b:
        holder = _topic_with_started_group(b, "locked", "lg")
        other = ShareConsumer("lg", b.bootstrap_servers, acknowledgement_mode="explicit")
        other.subscribe(["locked"])
        try:
            _produce(b, "locked", 1)
            got = []
            deadline = time.monotonic() + WAIT_S
            while not got and time.monotonic() < deadline:
                got = holder.poll(0.1)
            assert [r.delivery_count for r in got] == [1]
            assert other.poll(0.3) == []            # held by `holder`
            b.clock.advance(30.001)                 # share.record.lock.duration.ms
            again = []
            deadline = time.monotonic() + WAIT_S
            while not again and time.monotonic() < deadline:
                again = other.poll(0.1)
            assert [r.delivery_count for r in again] == [2]
            other.acknowledge(again[0])
        finally:
            holder._delivered = []                  # its record went to `other`
            holder.close()
            other.close()
