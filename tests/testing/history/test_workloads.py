"""The workloads with real clients against a real gregor broker: clean runs are valid, and
runs through a fault that loses acknowledged records are not."""
from __future__ import annotations

import struct

import pytest

from gregor.testing import PASS, Broker
from gregor.testing.history import History, check, key
from gregor.testing.history.workloads import CLIENTS, workload

PARTITIONS = 3
pytestmark = pytest.mark.interop


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
    w.run(clients=2, ops=10)
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


def _truncate_half(partition_dir) -> int:
    """Cut a stopped broker's partition log at its middle batch (and drop its indexes and
    producer snapshots, as a disk that lost its tail would); returns the first offset cut."""
    log = sorted(partition_dir.glob("*.log"))[-1]
    data = log.read_bytes()
    pos, batches = 0, []
    while pos + 12 <= len(data):
        base, length = struct.unpack(">qi", data[pos:pos + 12])
        batches.append((base, pos))
        pos += 12 + length
    base, cut = batches[len(batches) // 2]
    with open(log, "r+b") as f:
        f.truncate(cut)
    for f in partition_dir.iterdir():
        if f.suffix in (".index", ".timeindex", ".snapshot"):
            f.unlink()
    return base


def test_a_log_truncated_under_acknowledged_records_is_reported(tmp_path):
    """Acknowledged records cut from the log while the broker is down: the ones nobody had
    read are lost, and the offsets the next writes reuse hold two values."""
    h = History()
    b = Broker(data_dir=tmp_path)
    b.start()
    try:
        b.create_topic("trunc", partitions=2)
        keys = [key("trunc", p) for p in range(2)]
        w = workload("aiokafka", b.bootstrap_servers, keys, h, seed=5)
        w.run(clients=2, ops=12)
        b.stop()
        cut = _truncate_half(tmp_path / "trunc-0")
        b.start()
        w.run(clients=2, ops=12)
        w.final_read(timeout=30)
    finally:
        b.stop()
    report = check(h)
    assert not report.valid
    gone = {v for op in h.ops if op.type == "ok" for k, o, v in op.sends()
            if k == keys[0] and o is not None and o >= cut}
    read_before = {v for op in h.ops if op.type == "ok" for k, _, v in op.reads()}
    flagged = {e["value"] for e in report.anomalies["lost-write"]} | \
        {v for e in report.anomalies["unseen"] for v in e["values"]}
    assert gone - read_before <= flagged, report.summary()
    assert {e["key"] for e in report.anomalies["inconsistent-offsets"]} == {keys[0]}, \
        report.summary()
