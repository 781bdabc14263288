"""The streaming reader's planning on the driver (latestOffset / partitions / AvailableNow),
against a fake metadata client: admission control, new and vanished partitions, data loss."""
import pytest

pytest.importorskip("pyspark")
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows  # noqa: E402

from gregor.spark.offsets import DataLossError  # noqa: E402
from gregor.spark.options import parse_source_options  # noqa: E402
from gregor.spark.reader import GregorStreamReader, RangePartition  # noqa: E402


class FakeMetadata:
    def __init__(self, latest, earliest=None):
        self.latest_offsets = dict(latest)
        self.earliest_offsets = dict(earliest or {tp: 0 for tp in latest})
        self.latest_calls = 0

    def partitions(self, subscription, required=False):
        return sorted(self.latest_offsets)

    def earliest(self, tps):
        return {tp: self.earliest_offsets[tp] for tp in tps}

    def latest(self, tps, known=None):
        self.latest_calls += 1
        return {tp: self.latest_offsets[tp] for tp in tps}

    def offsets_for_times(self, wanted):
        raise AssertionError("no timestamps in these tests")

    def close(self):
        pass


def reader(meta, **options):
    opts = parse_source_options({"kafka.bootstrap.servers": "x:1", "subscribe": "t",
                                 "startingOffsets": "earliest", **options}, streaming=True)
    r = GregorStreamReader(opts)
    r._meta = meta
    return r


def test_initial_offset_and_max_rows_split():
    meta = FakeMetadata({("t", 0): 90, ("t", 1): 30})
    r = reader(meta, maxOffsetsPerTrigger="40")
    start = r.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    assert r.getDefaultReadLimit() == ReadMaxRows(40)
    end = r.latestOffset(start, ReadMaxRows(40))
    assert end == {"t": {"0": 30, "1": 10}}
    assert r.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 90, "1": 30}}
    parts = r.partitions(start, end)
    assert [(p.partition, p.start, p.end) for p in parts] == [(0, 0, 30), (1, 0, 10)]
    assert all(isinstance(p, RangePartition) for p in parts)


def test_min_offsets_alone_holds_back_until_enough_or_delay_passed(monkeypatch):
    """minOffsetsPerTrigger without maxOffsetsPerTrigger: the engine hands back the limit
    getDefaultReadLimit gave, ReadMinRows; as in Spark, the first trigger never waits."""
    meta = FakeMetadata({("t", 0): 5})
    r = reader(meta, minOffsetsPerTrigger="10", maxTriggerDelay="1m")
    limit = r.getDefaultReadLimit()
    assert limit == ReadMinRows(10)
    start = r.initialOffset()
    assert r.latestOffset(start, limit) == {"t": {"0": 5}}  # first trigger: no waiting
    meta.latest_offsets[("t", 0)] = 8
    assert r.latestOffset({"t": {"0": 5}}, limit) == {"t": {"0": 5}}  # 3 < 10: wait
    meta.latest_offsets[("t", 0)] = 15
    assert r.latestOffset({"t": {"0": 5}}, limit) == {"t": {"0": 15}}  # 10 wait: go
    meta.latest_offsets[("t", 0)] = 18  # 3 more, but the delay has passed
    clock = [r._last_trigger + 61]
    monkeypatch.setattr("gregor.spark.reader.time.monotonic", lambda: clock[0])
    assert r.latestOffset({"t": {"0": 15}}, limit) == {"t": {"0": 18}}


def test_min_and_max_offsets_together():
    meta = FakeMetadata({("t", 0): 100})
    r = reader(meta, minOffsetsPerTrigger="10", maxOffsetsPerTrigger="40", maxTriggerDelay="1h")
    limit = r.getDefaultReadLimit()
    assert limit == ReadMaxRows(40)   # PySpark has no composite limit: the minimum is applied here
    assert r.latestOffset(r.initialOffset(), limit) == {"t": {"0": 40}}
    meta.latest_offsets[("t", 0)] = 105
    assert r.latestOffset({"t": {"0": 100}}, limit) == {"t": {"0": 100}}  # 5 < 10: wait
    meta.latest_offsets[("t", 0)] = 200
    assert r.latestOffset({"t": {"0": 100}}, limit) == {"t": {"0": 140}}


def test_max_offsets_gives_every_partition_with_records_at_least_one():
    """Spark's rateLimit: a share below one record is rounded up, the others down."""
    meta = FakeMetadata({("t", 0): 1000, ("t", 1): 2, ("t", 2): 0})
    r = reader(meta, maxOffsetsPerTrigger="10")
    assert r.latestOffset(r.initialOffset(), ReadMaxRows(10)) == {"t": {"0": 9, "1": 1, "2": 0}}


def test_starting_latest_is_resolved_once_and_survives_a_rerun_of_batch_0():
    """startingOffsets=latest (the streaming default) on a topic being written to: Spark asks
    initialOffset() twice for batch 0; and after a restart that re-runs batch 0 it asks again
    in a new reader, where `latest` has moved on."""
    meta = FakeMetadata({("t", 0): 10, ("t", 1): 4})
    r = reader(meta, startingOffsets='{"t":{"0":-1,"1":-2}}')  # 0 floats, 1 starts at earliest
    start = r.initialOffset()
    assert start == {"t": {"0": 10, "1": 0}}
    meta.latest_offsets.update({("t", 0): 25, ("t", 1): 6})
    assert r.initialOffset() == start                  # the same answer while this run lives
    end0 = r.latestOffset(start, ReadAllAvailable())
    assert end0 == {"t": {"0": 10, "1": 6}}            # batch 0 does not advance the floating one
    assert [(p.partition, p.start, p.end) for p in r.partitions(start, end0)] == [(1, 0, 6)]
    assert r.latestOffset(end0, ReadAllAvailable()) == {"t": {"0": 25, "1": 6}}  # batch 1 reads 10..25

    # The driver died after logging batch 0, before committing it: a new run re-runs batch 0
    # from a fresh initialOffset(), resolved where `latest` is now.
    meta.latest_offsets[("t", 0)] = 40
    again = reader(meta, startingOffsets='{"t":{"0":-1,"1":-2}}')
    restart_start = again.initialOffset()
    assert restart_start == {"t": {"0": 40, "1": 0}}
    parts = again.partitions(restart_start, end0)       # no false "deleted and recreated"
    assert [(p.partition, p.start, p.end) for p in parts] == [(1, 0, 6)]


def test_report_latest_offset_reuses_what_latest_offset_fetched():
    meta = FakeMetadata({("t", 0): 7})
    r = reader(meta)
    assert r.reportLatestOffset() is None
    r.latestOffset(r.initialOffset(), ReadAllAvailable())
    calls = meta.latest_calls
    assert r.reportLatestOffset() == {"t": {"0": 7}} and meta.latest_calls == calls


def test_new_partition_starts_at_earliest_and_available_now_caps():
    meta = FakeMetadata({("t", 0): 10})
    r = reader(meta, failOnDataLoss="false")
    start = r.initialOffset()
    meta.latest_offsets[("t", 1)] = 7
    meta.earliest_offsets[("t", 1)] = 2
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 10, "1": 7}}
    assert [(p.partition, p.start, p.end) for p in r.partitions(start, end)] == [(0, 0, 10), (1, 2, 7)]
    # Spark reports an added partition that does not start at 0 as data loss
    with pytest.raises(DataLossError, match="t-1 was added with its first record at offset 2 instead of 0"):
        reader(meta).partitions(start, end)
    r.prepareForTriggerAvailableNow()
    meta.latest_offsets[("t", 0)] = 50  # arrives after the AvailableNow target: not read
    assert r.latestOffset(end, ReadAllAvailable()) == end


def test_records_below_the_log_start_are_data_loss():
    meta = FakeMetadata({("t", 0): 100}, earliest={("t", 0): 40})
    strict = reader(meta)
    with pytest.raises(DataLossError, match="no longer available"):
        strict.latestOffset({"t": {"0": 10}}, ReadAllAvailable())
    lenient = reader(meta, failOnDataLoss="false")
    assert lenient.latestOffset({"t": {"0": 10}}, ReadAllAvailable()) == {"t": {"0": 100}}
    assert [(p.start, p.end) for p in lenient.partitions({"t": {"0": 10}}, {"t": {"0": 100}})] == [(40, 100)]


def test_vanished_partition_fails_or_is_left_behind():
    meta = FakeMetadata({("t", 0): 10})
    with pytest.raises(DataLossError, match="no longer exists"):
        reader(meta).latestOffset({"t": {"0": 5, "1": 3}}, ReadAllAvailable())
    end = reader(meta, failOnDataLoss="false").latestOffset({"t": {"0": 5, "1": 3}}, ReadAllAvailable())
    assert end == {"t": {"0": 10, "1": 3}}  # kept where it was, never moves backwards


def test_available_now_never_waits_for_min_offsets():
    meta = FakeMetadata({("t", 0): 3})
    r = reader(meta, minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    start = r.initialOffset()
    r.latestOffset(start, ReadMinRows(100))                      # the first trigger
    assert r.latestOffset(start, ReadMinRows(100)) == start      # a running query waits
    r.prepareForTriggerAvailableNow()
    assert r.latestOffset(start, ReadMinRows(100)) == {"t": {"0": 3}}  # AvailableNow reads all
