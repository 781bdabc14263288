"""The Spark source's reader on a compacted topic: gaps left by compaction are not data loss
(failOnDataLoss=true reads through them), ranges starting or lying inside a gap read what
is there. Runs the task-side reader directly (no SparkSession needed)."""
from __future__ import annotations

import time

import pytest

from gregor.spark.client import read_range
from gregor.spark.offsets import OffsetRange
from tests.support.broker import BrokerProcess

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 3_000


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("spark-compaction") / "data",
                      settings={"log.cleaner.backoff.ms": 20})
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("table", 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "20000",
            "min.cleanable.dirty.ratio": "0.01"})])["table"].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 4096, "enable.idempotence": True})
        written = {}

        def cb(err, msg):
            assert err is None, err
            written[msg.offset()] = (msg.key(), msg.value())
        for i in range(N):
            p.produce("table", key=b"k%d" % (i % 20), value=b"v%d" % i, partition=0,
                      on_delivery=cb)
        assert p.flush(60) == 0
        deadline = time.monotonic() + 60
        while "cleaned table-0" not in b.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "cleaned table-0" in b.output()
        yield {"bootstrap.servers": b.bootstrap}, written
    finally:
        b.stop()


def _read(config, start, end):
    rows = []
    for batch in read_range(config, OffsetRange("table", 0, start, end), include_headers=False,
                            fail_on_data_loss=True, poll_timeout_ms=10_000):
        d = batch.to_pydict()
        rows += list(zip(d["offset"], d["key"], d["value"]))
    return rows


def test_gaps_are_not_data_loss(compacted):
    config, written = compacted
    rows = _read(config, 0, N)
    assert 0 < len(rows) < N
    for off, key, value in rows:
        assert written[off] == (key, value)
    last = {}
    for off in sorted(written):
        last[written[off][0]] = off
    assert {k: o for o, k, _ in rows} == last


def _stable_reads(config, second):
    """The whole range and `second(offsets)` read while the cleaner left the log alone. The
    cleaner may still be passing over later segments (a loaded machine runs it late), and
    compaction only ever removes records: two equal whole-range reads around the second one
    show that nothing changed in between."""
    for _ in range(50):
        offsets = [o for o, _, _ in _read(config, 0, N)]
        result = second(offsets)
        if [o for o, _, _ in _read(config, 0, N)] == offsets:
            return offsets, result
    raise AssertionError("the cleaner never left the log alone for three reads")


def test_ranges_inside_gaps(compacted):
    config, _ = compacted

    def from_first_gap(offsets):
        gap = next(o for o in range(N) if o not in set(offsets))
        return gap, [o for o, _, _ in _read(config, gap, N)]
    offsets, (gap, read) = _stable_reads(config, from_first_gap)
    assert read == [o for o in offsets if o >= gap]
    # a range entirely inside one gap reads nothing, without an error
    end = gap
    while end < N and end not in set(offsets):
        end += 1
    assert _read(config, gap, end) == []
