"""kill -9 of a transactional producer inside a transaction: the broker's coordinator aborts it
once transaction.timeout.ms has passed, and read_committed readers, held at its first offset
until then, move past it without ever seeing its records."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support.broker import BrokerProcess
from tests.support.txn_indexes import assert_txn_indexes_match_logs

TIMEOUT = 60
# The doomed transaction's timeout: long enough that, on a loaded machine, the checks made
# while it is open run before the coordinator aborts it (3 s was not: under load the abort
# came first), short enough to keep the test's wait modest.
TXN_TIMEOUT_MS = 15_000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_TXN_PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "doomed",
                  "transaction.timeout.ms": int(sys.argv[2]), "linger.ms": 1})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(50):
        p.produce("t", value=b"open-%d" % i, partition=0)
    p.flush(30)
    print("written", flush=True)
    time.sleep(600)
""")


def _ends(bootstrap):
    """(high watermark, last stable offset) of t-0."""
    from gregor.client.consumer import Consumer
    out = []
    for iso in ("read_uncommitted", "read_committed"):
        c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": iso})
        try:
            out.append(c.end_offsets([("t", 0)], timeout=60)[("t", 0)])
        finally:
            c.close()
    return tuple(out)


def _read_committed(bootstrap, expect):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                  "fetch.max.wait.ms": 100})
    c.assign([("t", 0, -2)])
    out, deadline = [], time.monotonic() + TIMEOUT + TXN_TIMEOUT_MS / 1000
    while len(out) < expect and time.monotonic() < deadline:
        out.extend(r.value for r in c.poll(0.5))
    out.extend(r.value for r in c.poll(1.0))      # anything past the expected count
    c.close()
    return out


def test_a_killed_transactional_producers_transaction_is_aborted(tmp_path):
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    b = BrokerProcess(tmp_path / "data", settings={
        "transaction.state.log.num.partitions": 3,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}).start()
    try:
        bs = b.bootstrap
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(TIMEOUT)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen([sys.executable, "-c", _TXN_PRODUCER, bs, str(TXN_TIMEOUT_MS)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout.readline().strip() == b"written"
        proc.kill()
        proc.wait(10)
        plain = Producer({"bootstrap.servers": bs})
        plain.produce("t", value=b"after", partition=0)
        plain.flush(TIMEOUT)
        assert _ends(bs) == (51, 0)            # the LSO held at the open transaction
        # aborted by the coordinator after its timeout: readers move on, without it
        assert _read_committed(bs, 1) == [b"after"]
        assert _ends(bs) == (52, 52)           # 50 aborted, their marker, 1 committed
    finally:
        b.stop()
    assert_txn_indexes_match_logs([tmp_path / "data"], aborts_at_least=1)
