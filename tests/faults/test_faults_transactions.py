"""kill -9 of the broker in the middle of transactions: after the restart, committed
transactions are whole and visible, aborted ones stay invisible to read_committed readers, an
open one holds them until it is aborted (by the producer's next instance), never half
visible."""
from __future__ import annotations

import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.txn_indexes import assert_txn_indexes_match_logs  # noqa: E402

TIMEOUT = 30


def _read(bootstrap, topic, isolation, expect, settle=2.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    out, quiet, deadline = [], time.monotonic(), time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                if len(out) >= expect and time.monotonic() - quiet > settle:
                    break
                continue
            if not m.error():
                out.append(m.value())
                quiet = time.monotonic()
    finally:
        c.close()
    return sorted(out)


def test_kill_9_mid_transactions(tmp_path):
    b = BrokerProcess(tmp_path / "data", settings={
        "transaction.state.log.num.partitions": 3}).start()
    try:
        bs = b.bootstrap
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result(TIMEOUT)
        p = Producer({"bootstrap.servers": bs, "transactional.id": "crash", "linger.ms": 1})
        p.init_transactions(TIMEOUT)

        def txn(prefix, end):
            p.begin_transaction()
            for i in range(30):
                p.produce("t", value=b"%s-%d" % (prefix, i), partition=i % 2)
            p.flush(TIMEOUT)
            if end == "commit":
                p.commit_transaction(TIMEOUT)
            elif end == "abort":
                p.abort_transaction(TIMEOUT)

        txn(b"A", "commit")
        txn(b"B", "abort")
        txn(b"C", "commit")
        txn(b"D", None)                      # left open when the broker dies
        committed = sorted(b"%s-%d" % (x, i) for x in (b"A", b"C") for i in range(30))
        b.restart(hard=True)
        # the open transaction holds read_committed readers; the aborted one stays hidden
        assert _read(bs, "t", "read_committed", expect=60) == committed
        assert len(_read(bs, "t", "read_uncommitted", expect=120)) == 120
        # a new instance of the producer aborts D and fences the old one
        p2 = Producer({"bootstrap.servers": bs, "transactional.id": "crash"})
        p2.init_transactions(TIMEOUT)
        p2.begin_transaction()
        p2.produce("t", value=b"E-0", partition=0)
        p2.commit_transaction(TIMEOUT)
        assert _read(bs, "t", "read_committed", expect=61) == sorted(committed + [b"E-0"])
        # and a second crash keeps all of it (the aborted-transaction index is on disk)
        b.restart(hard=True)
        assert _read(bs, "t", "read_committed", expect=61) == sorted(committed + [b"E-0"])
    finally:
        b.stop()
    # B aborted by its producer, D by the new instance: on both partitions
    assert_txn_indexes_match_logs([tmp_path / "data"], aborts_at_least=4)
