"""share.isolation.level=read_committed (set with confluent-kafka's AdminClient on the GROUP
resource): a share group reads only up to the last stable offset, and the records of aborted
transactions are archived, never acquired. Judged with confluent-kafka's transactional
producer, gregor's ShareConsumer and confluent-kafka's ShareConsumer; a read_uncommitted
group on the same topic gets everything, aborted records included."""
import time

import pytest

from gregor.client.consumer.share import ShareConsumer
from gregor.testing import Broker

WAIT_S = 60          # liveness bound only
TIMEOUT = 30


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


def new_topic(broker, name):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT)
    return name


def group_configs(broker, group, **configs):
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    for f in a.incremental_alter_configs([res]).values():
        f.result(TIMEOUT)


def txn_producer(broker, tid):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid,
                  "linger.ms": 5})
    p.init_transactions(TIMEOUT)
    return p


def txn(p, topic, values, commit=True):
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=v, partition=0)
    p.flush(TIMEOUT)
    if commit is None:
        return                      # left open
    (p.commit_transaction if commit else p.abort_transaction)(TIMEOUT)


def vals(prefix, n):
    return [b"%s%d" % (prefix, i) for i in range(n)]


def poll_until(poll, want: set, quiet_s=1.0) -> list:
    """Values polled until all of `want` arrived, then for quiet_s more (so a record that
    must not come has had its chance)."""
    got, deadline, done_at = [], time.monotonic() + WAIT_S, None
    while time.monotonic() < deadline:
        got += poll()
        if done_at is None and want <= set(got):
            done_at = time.monotonic()
        if done_at is not None and time.monotonic() - done_at >= quiet_s:
            break
    return got


def ours(consumer):
    return lambda: [r.value for r in consumer.poll(0.2)]


def theirs(consumer):
    return lambda: [m.value() for m in consumer.poll(0.2) if not m.error()]


def write_mixed(broker, topic):
    """committed a*, aborted x*, committed b*, and an open transaction o*; returns the
    producer holding the open one."""
    p = txn_producer(broker, f"tx-{topic}")
    txn(p, topic, vals(b"a", 5))
    txn(p, topic, vals(b"x", 5), commit=False)
    plain_aborted = txn_producer(broker, f"tx2-{topic}")   # a second producer's abort
    txn(plain_aborted, topic, vals(b"y", 3), commit=False)
    txn(p, topic, vals(b"b", 5))
    txn(plain_aborted, topic, vals(b"o", 4), commit=None)
    return p, plain_aborted


@pytest.mark.parametrize("client", ["gregor", "confluent"])
def test_read_committed_share_group_gets_only_committed_records(broker, client):
    topic = new_topic(broker, f"rc-{client}")
    group = f"rc-{client}"
    group_configs(broker, group, share_isolation_level="read_committed",
                  share_auto_offset_reset="earliest")
    p, open_p = write_mixed(broker, topic)
    if client == "gregor":
        c = ShareConsumer(group, broker.bootstrap_servers)
        poll = ours(c)
    else:
        from confluent_kafka import ShareConsumer as CkShareConsumer
        c = CkShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
        poll = theirs(c)
    try:
        c.subscribe([topic])
        committed = set(vals(b"a", 5) + vals(b"b", 5))
        got = poll_until(poll, committed)
        assert sorted(got) == sorted(committed)       # once each, no aborted, nothing open
        open_p.commit_transaction(TIMEOUT)             # the open one commits: now it comes
        later = poll_until(poll, set(vals(b"o", 4)))
        assert sorted(later) == sorted(vals(b"o", 4))
    finally:
        c.close()
    key = next(k for k in broker.broker.share.partitions if k[0] == group)
    sp = broker.broker.share.partitions[key]
    assert sp.archived_total >= 8                      # x*, y*, and the markers


def test_read_uncommitted_is_the_default_and_gets_aborted_records(broker):
    topic = new_topic(broker, "ru")
    group_configs(broker, "ru", share_auto_offset_reset="earliest")
    _p, _open = write_mixed(broker, topic)
    c = ShareConsumer("ru", broker.bootstrap_servers)
    try:
        c.subscribe([topic])
        everything = set(vals(b"a", 5) + vals(b"x", 5) + vals(b"y", 3) + vals(b"b", 5)
                         + vals(b"o", 4))
        got = poll_until(ours(c), everything)
        assert sorted(got) == sorted(everything)
    finally:
        c.close()
