"""The workloads with real clients against a real gregor broker: clean runs are valid, and
runs through a fault that loses acknowledged records are not."""
from __future__ import annotations

import pytest

from gregor.testing import PASS, Broker
from gregor.testing.history import History, check, key
from gregor.testing.history.workloads import CLIENTS, workload

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


_topics = iter(range(10_000))


def topic_keys(broker, transactional=False):
    name = f"h{next(_topics)}"
    broker.create_topic(name, partitions=PARTITIONS)
    return [key(name, p) for p in range(PARTITIONS)]


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("mode", ["txn-assign", "queue-subscribe"])
def test_a_short_clean_run_is_valid(broker, client, mode):
    h = History()
    w = workload(client, broker.bootstrap_servers, topic_keys(broker), h, seed=7,
                 transactional=mode.startswith("txn"), subscribe=mode.endswith("subscribe"))
    w.run(clients=2, ops=12)
    ends = w.final_read(timeout=60)
    report = check(h)
    assert report.valid, report.summary()
    ok = report.counts[("txn" if w.transactional else "send")].get("ok", 0)
    read = sum(len(op.reads()) for op in h.ops if op.meta.get("final") and op.type == "ok")
    assert ok > 0 and read > 0 and sum(ends.values()) > 0, report.summary()
    if w.transactional:
        assert report.counts["txn"].get("fail", 0) > 0     # some aborted on purpose
    if w.subscribe:
        assert any(op.meta.get("rebalance_log") for op in h.ops), "no rebalance recorded"


def test_an_acknowledged_record_hidden_from_every_fetch_is_reported(broker):
    """Fetches of partition 0 before the victim's offset get one batch (one record: each
    send waits for its ack) and a fetch at the victim's offset is moved one past it, so no
    consumer ever receives it although it was acknowledged: a lost write, from a real run."""
    h = History()
    keys = topic_keys(broker)
    w = workload("kafka-python", broker.bootstrap_servers, keys, h, seed=3, poll_share=0.0)
    w.run(clients=2, ops=10)
    acked = sorted((o, v) for op in h.ops if op.type == "ok"
                   for k, o, v in op.sends() if k == keys[0])
    assert len(acked) >= 3, acked
    victim_offset, victim = acked[len(acked) // 2]

    def skip_victim(request):
        for t in request["topics"]:
            for p in t["partitions"]:
                if p["partition"] == 0 and p["fetch_offset"] < victim_offset:
                    p["partition_max_bytes"] = 1     # one batch at a time up to the victim
                elif p["partition"] == 0 and p["fetch_offset"] == victim_offset:
                    p["fetch_offset"] = victim_offset + 1
        return PASS
    with broker.intercept("Fetch", skip_victim):
        w.poll_share = 0.5
        w.run(clients=2, ops=10)
        w.final_read(timeout=30)
    report = check(h)
    assert not report.valid
    lost = [(e["key"], e["offset"], e["value"]) for e in report.anomalies["lost-write"]]
    assert lost == [(keys[0], victim_offset, victim)], report.summary()
    assert report.anomalies["poll-skip"] or report.anomalies["int-poll-skip"]
