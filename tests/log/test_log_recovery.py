import logging
import os

from gregor.log import Log, LogConfig
from gregor.protocol.records.header import parse_header
from tests.log.batches import make_batch, read_all, split_batches

BATCH = len(make_batch(1, 100))


def open_log(path, **kw):
    kw.setdefault("flush_rolled_in_background", False)
    kw.setdefault("index_interval_bytes", 100)
    return Log.open(path, LogConfig(**kw))


def fill(log, n, producer_id=-1):
    for i in range(n):
        log.append(make_batch(1, 100, tag=i, producer_id=producer_id,
                              producer_epoch=0 if producer_id >= 0 else -1,
                              base_sequence=i if producer_id >= 0 else -1))


def seg_path(directory, base, ext=".log"):
    return os.path.join(directory, f"{base:020d}{ext}")


def test_unclean_stop_without_damage_keeps_everything(tmp_path):
    d = tmp_path / "p"
    log = open_log(d, segment_bytes=BATCH * 3)
    fill(log, 7, producer_id=4)
    data = read_all(log)
    log.abandon()
    again = open_log(d, segment_bytes=BATCH * 3)
    r = again.recovery_report
    assert not r.clean and r.bytes_truncated == 0 and not r.problems
    assert r.segments_scanned == 1          # only the segment holding the recovery point
    assert read_all(again) == data
    assert again.producer_state[4].last_seq == 6
    assert again.recovery_point == again.log_end_offset
    again.close()


def test_partial_batch_is_cut_and_reported(tmp_path, caplog):
    d = tmp_path / "p"
    log = open_log(d)
    fill(log, 3)
    log.abandon()
    os.truncate(seg_path(d, 0), 3 * BATCH - 10)
    with caplog.at_level(logging.WARNING, logger="gregor.log"):
        again = open_log(d)
    assert again.log_end_offset == 2
    assert again.recovery_report.bytes_truncated == BATCH - 10
    assert any("partial batch" in m for m in caplog.messages)
    assert os.path.getsize(seg_path(d, 0)) == 2 * BATCH
    again.close()


def test_crc_failure_truncates_there_and_deletes_later_segments(tmp_path):
    d = tmp_path / "p"
    log = open_log(d, segment_bytes=BATCH * 2, flush_rolled_in_background=True)
    fill(log, 3)
    log.flush()                     # recovery point at 3: segment 2 is where scanning starts
    fill(log, 3)                    # offsets 3..5 in segments 2 and 4
    log.abandon()
    path = seg_path(d, 2)
    with open(path, "r+b") as f:    # damage offset 3's batch (second batch of segment 2)
        f.seek(BATCH + 70)
        b = f.read(1)
        f.seek(BATCH + 70)
        f.write(bytes([b[0] ^ 0x40]))
    again = open_log(d, segment_bytes=BATCH * 2)
    r = again.recovery_report
    assert again.log_end_offset == 3
    assert r.segments_deleted == [4]
    assert any("CRC mismatch" in p for p in r.problems)
    assert not os.path.exists(seg_path(d, 4))
    assert again.append(make_batch(1)).base_offset == 3
    again.close()


def test_segments_below_recovery_point_are_trusted_but_tail_checked(tmp_path):
    d = tmp_path / "p"
    log = open_log(d, segment_bytes=BATCH * 2)
    fill(log, 6)                    # segments 0, 2, 4; recovery point 4
    log.abandon()
    # a cut inside an old segment is still found by its tail check
    os.truncate(seg_path(d, 0), BATCH + 5)
    again = open_log(d, segment_bytes=BATCH * 2)
    assert again.log_end_offset == 1
    assert again.recovery_report.segments_deleted == [2, 4]
    again.close()


def test_clean_open_with_damaged_index_rebuilds_it(tmp_path):
    d = tmp_path / "p"
    log = open_log(d, index_interval_bytes=1)
    fill(log, 5)
    positions = list(log.segments[0].offset_index.positions)
    log.close()
    with open(seg_path(d, 0, ".index"), "ab") as f:
        f.write(b"\x01\x02\x03")
    again = open_log(d, index_interval_bytes=1)
    assert again.recovery_report.clean
    assert again.recovery_report.segments_scanned == 1
    assert list(again.segments[0].offset_index.positions) == positions
    assert parse_header(again.read(3, 1)).base_offset == 3
    again.close()


def test_producer_state_is_rebuilt_when_snapshots_are_ahead_or_missing(tmp_path):
    d = tmp_path / "p"
    log = open_log(d, segment_bytes=BATCH * 2)
    fill(log, 5, producer_id=9)
    log.close()
    for name in os.listdir(d):          # no snapshot at all: replay the whole log
        if name.endswith(".snapshot"):
            os.unlink(d / name)
    again = open_log(d, segment_bytes=BATCH * 2)
    assert again.producer_state[9].last_seq == 4
    again.abandon()
    os.truncate(seg_path(d, 4), 0)       # the log now ends at 4, the snapshot says 5
    third = open_log(d, segment_bytes=BATCH * 2)
    assert third.log_end_offset == 4
    assert third.producer_state[9].last_seq == 3
    assert not os.path.exists(seg_path(d, 5, ".snapshot"))
    third.append(make_batch(1, producer_id=9, producer_epoch=0, base_sequence=4))
    third.close()


def test_log_start_beyond_recovered_end_starts_empty_there(tmp_path):
    d = tmp_path / "p"
    log = open_log(d)
    fill(log, 4)
    log.delete_records_before(3)
    log.abandon()
    os.truncate(seg_path(d, 0), BATCH)   # only offset 0 survives, below the log start 3
    again = open_log(d)
    assert (again.log_start_offset, again.log_end_offset) == (3, 3)
    assert again.append(make_batch(1)).base_offset == 3
    again.close()


def test_leftover_temp_and_orphan_index_files_are_removed(tmp_path):
    d = tmp_path / "p"
    log = open_log(d)
    fill(log, 1)
    log.close()
    (d / "recovery-point.tmp").write_bytes(b"12")
    (d / f"{50:020d}.index").write_bytes(b"")
    again = open_log(d)
    assert not (d / "recovery-point.tmp").exists()
    assert not (d / f"{50:020d}.index").exists()
    assert len(split_batches(read_all(again))) == 1
    again.close()
