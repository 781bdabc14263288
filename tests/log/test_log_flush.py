import os

import pytest

from gregor.log import Log, LogConfig
from tests.log.batches import make_batch


@pytest.fixture
def fsyncs(monkeypatch):
    calls = []
    real = os.fsync

    def counting(fd):
        calls.append(fd)
        real(fd)
    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_default_policy_never_fsyncs_on_append(tmp_path, fsyncs):
    log = Log.open(tmp_path / "p", LogConfig())
    before = len(fsyncs)
    for _ in range(20):
        log.append(make_batch(1))
    assert len(fsyncs) == before
    assert log.sync() is False
    assert log.recovery_point == 0
    log.close()


def test_flush_messages_inline(tmp_path, fsyncs):
    log = Log.open(tmp_path / "p", LogConfig(flush_messages=3))
    log.append(make_batch(2))
    n = len(fsyncs)
    assert log.recovery_point == 0
    log.append(make_batch(1))                # 3 records since the last flush
    assert len(fsyncs) > n
    assert log.recovery_point == 3
    log.close()


def test_flush_ms_is_checked_on_append_and_by_sync(tmp_path, fsyncs):
    now = [0]
    log = Log.open(tmp_path / "p", LogConfig(flush_ms=100), clock=lambda: now[0])
    log.append(make_batch(1))
    assert log.recovery_point == 0
    now[0] = 150
    assert log.sync() is True                # a timer tick with no appends
    assert log.recovery_point == 1
    log.append(make_batch(1), now_ms=200)
    assert log.recovery_point == 1
    log.append(make_batch(1), now_ms=260)
    assert log.recovery_point == 3
    log.close()


def test_group_commit_shares_one_fsync(tmp_path, fsyncs):
    log = Log.open(tmp_path / "p", LogConfig(flush_messages=1, flush_policy="group"))
    n = len(fsyncs)
    for _ in range(10):
        log.append(make_batch(1))
    assert len(fsyncs) == n                  # appends never fsync in group mode
    assert log.recovery_point == 0
    assert log.sync() is True
    assert log.recovery_point == 10
    assert log.sync() is False               # nothing new
    n = len(fsyncs)
    for _ in range(10):
        log.append(make_batch(1))
    assert log.sync() is True
    assert len(fsyncs) - n == 1              # the log file; no index entry was added
    assert log.recovery_point == 20
    log.close()


def test_sync_ticket_runs_off_thread_and_survives_a_roll(tmp_path):
    import threading
    log = Log.open(tmp_path / "p", LogConfig(segment_bytes=200, flush_policy="group",
                                             flush_messages=1,
                                             flush_rolled_in_background=False))
    log.append(make_batch(1, 120))
    ticket = log.begin_sync()
    assert ticket is not None and ticket.offset == 1
    log.append(make_batch(1, 120))           # rolls: the ticket's descriptors stay valid
    t = threading.Thread(target=ticket.run)
    t.start()
    t.join()
    log.finish_sync(ticket)
    assert log.recovery_point >= 1
    stale = log.begin_sync(force=True)
    log.truncate_to(0)
    stale.run()
    log.finish_sync(stale)                   # taken before the truncation: ignored
    assert log.recovery_point == 0
    log.close()


def test_rolled_segment_is_flushed_in_the_background(tmp_path, fsyncs):
    log = Log.open(tmp_path / "p", LogConfig(segment_bytes=200))
    for _ in range(3):
        log.append(make_batch(1, 120))       # each batch rolls the previous segment
    log._join_background()                   # the flush threads are done
    assert log.recovery_point == 2           # the active segment (base 2) is not flushed
    with open(tmp_path / "p" / "recovery-point") as f:
        assert int(f.read()) == 2
    log.close()
    with open(tmp_path / "p" / "recovery-point") as f:
        assert int(f.read()) == 3


def test_group_commit_can_leave_the_active_segments_indexes_to_the_roll(tmp_path, fsyncs):
    log = Log.open(tmp_path / "p", LogConfig(flush_policy="group", index_interval_bytes=100,
                                             segment_bytes=2000,
                                             flush_rolled_in_background=False))
    seg = log.segments[-1]
    for _ in range(5):
        log.append(make_batch(1, 120))       # an index entry after each batch
    assert seg.offset_index.dirty and seg.time_index.dirty
    ticket = log.begin_sync(force=True, active_indexes=False)
    # the log file, its directory (new files) and the data directory (a new log's name)
    assert len(ticket.fds) == 3
    ticket.run()
    log.finish_sync(ticket)
    assert log.recovery_point == 5
    assert seg.offset_index.dirty and seg.time_index.dirty     # still owed an fsync
    n = len(fsyncs)
    for _ in range(20):                      # rolls: the sealed segment's flush takes them
        log.append(make_batch(1, 120))
    assert log.segments[0] is seg and not seg.offset_index.dirty
    assert not seg.time_index.dirty and len(fsyncs) - n >= 3
    log.close()


def test_unclean_stop_rebuilds_active_indexes_that_were_never_fsynced(tmp_path):
    d = tmp_path / "p"
    cfg = dict(flush_policy="group", index_interval_bytes=100, flush_rolled_in_background=False)
    log = Log.open(d, LogConfig(**cfg))
    for i in range(10):
        log.append(make_batch(1, 120, tag=i))
    ticket = log.begin_sync(force=True, active_indexes=False)
    ticket.run()
    log.finish_sync(ticket)
    expected = [log.read(i, 1 << 20) for i in range(10)]
    index_files = [f for f in os.listdir(d) if f.endswith((".index", ".timeindex"))]
    for f in index_files:                    # as if their pages never reached the disk
        os.truncate(d / f, 0)
    log.abandon()
    again = Log.open(d, LogConfig(**cfg))
    assert not again.recovery_report.clean and again.log_end_offset == 10
    assert again.recovery_report.segments_scanned == 1
    assert [again.read(i, 1 << 20) for i in range(10)] == expected
    assert len(again.segments[-1].offset_index) > 0
    again.close()
