"""AdminClient's transaction calls (ListTransactions, DescribeTransactions, DescribeProducers)
and DescribeLogDirs against a gregor broker process."""
from __future__ import annotations

import time

import pytest

from gregor import AdminClient, Producer
from gregor.protocol.errors import UnsupportedVersionError

pytestmark = pytest.mark.interop


@pytest.fixture
def admin(client_broker):
    with AdminClient({"bootstrap.servers": client_broker.bootstrap}) as a:
        yield a


def test_open_transaction_is_listed_described_and_seen_on_the_partition(admin, client_broker,
                                                                        new_topic):
    topic = new_topic(2)
    p = Producer({"bootstrap.servers": client_broker.bootstrap,
                  "transactional.id": "admin-txn-open", "transaction.timeout.ms": 60000})
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"v", partition=1).get(10)
        listed = {t.transactional_id: t for t in admin.list_transactions()}
        assert listed["admin-txn-open"].state == "Ongoing"
        assert listed["admin-txn-open"].producer_id >= 0
        d = admin.describe_transactions(["admin-txn-open"])["admin-txn-open"]
        assert d.state == "Ongoing" and d.timeout_ms == 60000
        assert d.partitions == [(topic, 1)] and d.start_time_ms > 0
        assert d.producer_id == listed["admin-txn-open"].producer_id
        producers = admin.describe_producers([(topic, 0), (topic, 1)])
        assert producers[(topic, 0)] == []
        [state] = producers[(topic, 1)]
        assert state.producer_id == d.producer_id and state.current_txn_start_offset == 0
        assert [t.transactional_id for t in admin.list_transactions(states=["Ongoing"])
                if t.transactional_id == "admin-txn-open"] == ["admin-txn-open"]
        p.commit_transaction()
        # As in Kafka, the commit returns once PrepareCommit is durable; the markers follow.
        assert admin.describe_transactions("admin-txn-open")["admin-txn-open"].state in (
            "PrepareCommit", "CompleteCommit")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            [state] = admin.describe_producers([(topic, 1)])[(topic, 1)]
            if state.current_txn_start_offset == -1:
                break
            time.sleep(0.05)
        assert state.current_txn_start_offset == -1
    finally:
        p.close()


def test_describe_log_dirs_gives_partition_sizes(admin, client_broker, new_topic):
    topic = new_topic(2)
    p = Producer({"bootstrap.servers": client_broker.bootstrap})
    try:
        for i in range(20):
            p.send(topic, b"v%d" % i, partition=1)
        p.flush(10)
    finally:
        p.close()
    [(node, [d])] = admin.describe_log_dirs().items()
    assert d.error_code == 0 and d.total_bytes >= d.usable_bytes > 0
    assert d.partition_sizes[(topic, 0)] == 0
    assert d.partition_sizes[(topic, 1)] == sum(
        f.stat().st_size for f in (client_broker.data_dir / f"{topic}-1").glob("*.log")) > 0


def test_describe_log_dirs_unsupported_is_a_clear_error():
    from gregor.testing import Broker
    with Broker() as b:
        b.limit_versions("DescribeLogDirs", -1)          # as a broker that does not serve it
        with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as a:
            assert not a.supports("DescribeLogDirs")
            with pytest.raises(UnsupportedVersionError, match="does not support DescribeLogDirs"):
                a.describe_log_dirs()
