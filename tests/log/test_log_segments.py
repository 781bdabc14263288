import os

import pytest

from gregor.log import Log, LogConfig
from gregor.protocol.errors import OffsetOutOfRangeError
from gregor.protocol.records.header import iter_headers, parse_header
from tests.log.batches import make_batch, read_all, split_batches

BATCH = len(make_batch(1, 100))          # every batch in these tests has this size


def open_log(path, **kw):
    kw.setdefault("flush_rolled_in_background", False)
    kw.setdefault("index_interval_bytes", 100)
    return Log.open(path, LogConfig(**kw))


def fill(log, n, *, start_ts=1_000, step=10, producer_id=-1, producer_epoch=-1):
    for i in range(n):
        seq = i if producer_id >= 0 else -1
        log.append(make_batch(1, 100, timestamp=start_ts + i * step, tag=i,
                              producer_id=producer_id, producer_epoch=producer_epoch,
                              base_sequence=seq))


def test_roll_by_segment_bytes_names_files_by_base_offset(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 3)
    fill(log, 7)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    names = sorted(os.listdir(tmp_path / "p"))
    for base in (0, 3, 6):
        for ext in (".log", ".index", ".timeindex"):
            assert f"{base:020d}{ext}" in names
    # a producer snapshot is taken at each roll
    assert f"{3:020d}.snapshot" in names and f"{6:020d}.snapshot" in names
    assert log.recovery_point == 6         # rolled segments were flushed
    assert [parse_header(b).base_offset for b in split_batches(read_all(log))] == list(range(7))
    log.close()


def test_roll_by_segment_ms_uses_batch_timestamps(tmp_path):
    log = open_log(tmp_path / "p", segment_ms=1000)
    log.append(make_batch(1, timestamp=10_000))
    log.append(make_batch(1, timestamp=10_900))
    assert len(log.segments) == 1
    log.append(make_batch(1, timestamp=11_001))      # 1001 ms after the segment's first batch
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_roll_when_offset_index_is_full(tmp_path):
    log = open_log(tmp_path / "p", segment_index_bytes=16, index_interval_bytes=1)
    fill(log, 6)
    assert all(len(s.offset_index) <= 2 for s in log.segments)
    assert len(log.segments) == 2
    log.close()


def test_explicit_roll_ignores_an_empty_segment(tmp_path):
    log = open_log(tmp_path / "p")
    assert log.roll() is log.active_segment
    fill(log, 1)
    log.roll()
    log.roll()
    assert [s.base_offset for s in log.segments] == [0, 1]
    log.close()


def test_retention_by_bytes_keeps_at_least_retention_bytes(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2, retention_bytes=BATCH * 3)
    fill(log, 8)                                           # segments 0,2,4,6 of 2 batches
    assert log.apply_retention(now_ms=0) == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    assert parse_header(log.read(4, 100)).base_offset == 4
    log.close()


def test_retention_by_time_stops_at_first_young_segment_and_respects_hw(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2, retention_ms=1000)
    fill(log, 6, start_ts=0, step=1000)           # segments [0,1000] [2000,3000] [4000,5000]
    assert log.apply_retention(now_ms=4500) == 2   # keeps timestamps >= 3500
    assert log.log_start_offset == 4
    # everything expired, but the high watermark protects the unreplicated tail
    assert log.apply_retention(now_ms=10**9, high_watermark=5) == 0
    assert log.apply_retention(now_ms=10**9) == 1
    assert log.log_start_offset == log.log_end_offset == 6
    assert log.read(6, 100) == b""
    log.append(make_batch(1))                      # the log goes on in a fresh segment
    assert log.log_end_offset == 7
    log.close()


def test_negative_retention_keeps_everything(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH, retention_ms=-1, retention_bytes=-1)
    fill(log, 4, start_ts=0)
    assert log.apply_retention(now_ms=10**12) == 0
    log.close()


def test_delete_records_before_moves_log_start_and_drops_whole_segments(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    fill(log, 6)
    assert log.delete_records_before(3) == 3
    assert [s.base_offset for s in log.segments] == [2, 4]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    assert parse_header(log.read(3, 100)).base_offset == 3
    assert log.delete_records_before(1) == 3       # never moves back
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(7)
    log.close()
    again = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    assert again.log_start_offset == 3
    again.close()


def test_truncate_to_mid_batch_and_across_segments(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    for i in range(6):
        log.append(make_batch(2, 84, tag=i, producer_id=1, producer_epoch=0,
                              base_sequence=2 * i))
    assert log.log_end_offset == 12
    before = read_all(log)
    log.truncate_to(7)                             # offset 7 is inside batch 6..7
    assert log.log_end_offset == 6
    assert read_all(log) == before[:3 * len(split_batches(before)[0])]
    assert log.producer_state[1].last_seq == 5
    assert all(s.base_offset <= 6 for s in log.segments)
    log.append(make_batch(1, producer_id=1, producer_epoch=0, base_sequence=6))
    assert log.log_end_offset == 7
    log.truncate_to(100)                           # beyond the end: nothing happens
    assert log.log_end_offset == 7
    log.close()
    again = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    assert again.log_end_offset == 7 and again.producer_state[1].last_seq == 6
    again.close()


def test_truncate_fully_starts_an_empty_log(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    fill(log, 5, producer_id=1, producer_epoch=0)
    log.truncate_fully(100)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    assert len(log.producer_state) == 0
    assert log.append(make_batch(1)).base_offset == 100
    log.close()
    again = open_log(tmp_path / "p")
    assert (again.log_start_offset, again.log_end_offset) == (100, 101)
    assert sorted(os.listdir(tmp_path / "p"))[0].startswith(f"{100:020d}")
    again.close()


def test_offset_for_timestamp_finds_first_batch_reaching_the_target(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 3)
    fill(log, 10, start_ts=1000, step=100)         # batch i has timestamp 1000 + 100 i
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1100)
    assert log.offset_for_timestamp(1750) == (8, 1800)
    assert log.offset_for_timestamp(1900) == (9, 1900)
    assert log.offset_for_timestamp(1901) is None
    log.delete_records_before(5)
    assert log.offset_for_timestamp(1000) == (5, 1500)
    log.close()


def test_offset_for_timestamp_with_out_of_order_timestamps(tmp_path):
    log = open_log(tmp_path / "p", index_interval_bytes=1)
    for ts in (500, 100, 900, 300, 1200):
        log.append(make_batch(1, 50, timestamp=ts))
    assert log.offset_for_timestamp(200) == (0, 500)
    assert log.offset_for_timestamp(600) == (2, 900)
    assert log.offset_for_timestamp(1000) == (4, 1200)
    log.close()


def test_reopen_after_clean_close_loads_without_scanning(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 4)
    fill(log, 10, producer_id=3, producer_epoch=2)
    data = read_all(log)
    index_view = [(list(s.offset_index.positions), s.time_index.timestamps, s.max_timestamp)
                  for s in log.segments]
    log.close()
    assert os.path.exists(tmp_path / "p" / "clean-shutdown")
    again = open_log(tmp_path / "p", segment_bytes=BATCH * 4)
    assert not os.path.exists(tmp_path / "p" / "clean-shutdown")
    assert again.recovery_report.clean and again.recovery_report.segments_scanned == 0
    assert read_all(again) == data
    assert [(list(s.offset_index.positions), s.time_index.timestamps, s.max_timestamp)
            for s in again.segments] == index_view
    assert (again.producer_state[3].epoch, again.producer_state[3].last_seq) == (2, 9)
    assert again.log_end_offset == 10
    again.close()


def test_size_and_read_span_many_segments(tmp_path):
    log = open_log(tmp_path / "p", segment_bytes=BATCH * 2)
    fill(log, 9)
    assert log.size_bytes == 9 * BATCH
    offsets = [h.base_offset for _, h in iter_headers(read_all(log))]
    assert offsets == list(range(9))
    log.close()


def test_delete_removes_the_directory(tmp_path):
    log = open_log(tmp_path / "p")
    fill(log, 2)
    log.delete()
    assert not os.path.exists(tmp_path / "p")
