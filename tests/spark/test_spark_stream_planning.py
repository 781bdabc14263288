"""The streaming reader's planning on the driver (latestOffset / partitions / AvailableNow),
against a fake metadata client: admission control, new and vanished partitions, data loss."""
import pytest

pytest.importorskip("pyspark")
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows  # noqa: E402

from gregor.spark.offsets import DataLossError  # noqa: E402
from gregor.spark.options import parse_source_options  # noqa: E402
from gregor.spark.reader import GregorStreamReader, RangePartition  # noqa: E402


class FakeMetadata:
    def __init__(self, latest, earliest=None):
        self.latest_offsets = dict(latest)
        self.earliest_offsets = dict(earliest or {tp: 0 for tp in latest})

    def partitions(self, subscription):
        return sorted(self.latest_offsets)

    def earliest(self, tps):
        return {tp: self.earliest_offsets[tp] for tp in tps}

    def latest(self, tps):
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


def test_min_offsets_holds_back_until_enough_or_delay_passed(monkeypatch):
    meta = FakeMetadata({("t", 0): 5})
    r = reader(meta, minOffsetsPerTrigger="10", maxTriggerDelay="1m")
    start = r.initialOffset()
    assert r.latestOffset(start, ReadMaxRows(1000)) == start  # 5 < 10: wait
    meta.latest_offsets[("t", 0)] = 12
    assert r.latestOffset(start, ReadMaxRows(1000)) == {"t": {"0": 12}}
    meta.latest_offsets[("t", 0)] = 15  # 3 more, but the delay has passed
    clock = [r._last_trigger + 61]
    monkeypatch.setattr("gregor.spark.reader.time.monotonic", lambda: clock[0])
    assert r.latestOffset({"t": {"0": 12}}, ReadMaxRows(1000)) == {"t": {"0": 15}}


def test_new_partition_starts_at_earliest_and_available_now_caps():
    meta = FakeMetadata({("t", 0): 10})
    r = reader(meta)
    start = r.initialOffset()
    meta.latest_offsets[("t", 1)] = 7
    meta.earliest_offsets[("t", 1)] = 2
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 10, "1": 7}}
    assert [(p.partition, p.start, p.end) for p in r.partitions(start, end)] == [(0, 0, 10), (1, 2, 7)]
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
    assert r.latestOffset(start, ReadMaxRows(1000)) == start  # a running query waits
    r.prepareForTriggerAvailableNow()
    assert r.latestOffset(start, ReadMaxRows(1000)) == {"t": {"0": 3}}  # AvailableNow reads all
