"""What creating a log makes durable, and when (crash consistency of a new partition).

A new log's directory holds one empty segment and checkpoint files that recovery rebuilds, so
creating it fsyncs nothing: after a power cut the directory may be missing or partial, and
opening it again gives the same empty log. What must be durable before any data in it is
promised is its names: the segment's in the directory and the directory's in the data
directory. The log's first fsync round (a produce's group commit, a roll, a flush, the clean
close) covers both. A log reopened after an unclean stop makes what it read back durable,
names included, before trusting it."""
from __future__ import annotations

import os

import pytest

from gregor.log import Log, LogConfig
from tests.log.batches import make_batch


@pytest.fixture
def fsynced(monkeypatch):
    """The paths fsynced, in order."""
    paths = []
    real = os.fsync

    def record(fd):
        paths.append(os.path.realpath(f"/proc/self/fd/{fd}"))
        real(fd)
    monkeypatch.setattr(os, "fsync", record)
    return paths


def test_creating_a_log_fsyncs_nothing_and_its_first_sync_covers_the_names(tmp_path, fsynced):
    d = tmp_path / "data" / "t-0"
    d.parent.mkdir()
    log = Log.open(d, LogConfig(flush_policy="group"))
    assert fsynced == []
    log.append(make_batch(3))
    ticket = log.begin_sync(force=True, active_indexes=False)
    ticket.run()
    log.finish_sync(ticket)
    seg_log = str(d / "00000000000000000000.log")
    assert set(fsynced) == {seg_log, str(d), str(d.parent)}
    assert fsynced.index(seg_log) < fsynced.index(str(d))
    fsynced.clear()
    log.append(make_batch(1))                # later rounds: the data only
    ticket = log.begin_sync(force=True, active_indexes=False)
    ticket.run()
    log.finish_sync(ticket)
    assert fsynced == [seg_log]
    log.close()


@pytest.mark.parametrize("loss", ["directory", "segment", "checkpoints", "torn checkpoints"])
def test_a_new_log_whose_unsynced_files_were_lost_opens_empty_again(tmp_path, loss):
    """What a power cut may leave of a log created and never synced."""
    d = tmp_path / "t-0"
    log = Log.open(d, LogConfig())
    log.close()                 # (a clean close would sync; the cases below undo its work)
    (d / "clean-shutdown").unlink()
    if loss == "directory":
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    elif loss == "segment":
        for f in d.glob("00000000000000000000.*"):
            f.unlink()
    elif loss == "checkpoints":
        for name in ("recovery-point", "log-start-offset", "leader-epoch-checkpoint"):
            (d / name).unlink(missing_ok=True)
    else:
        for f in d.iterdir():
            if not f.name.startswith("000"):
                f.write_bytes(b"")
    log = Log.open(d, LogConfig())
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    log.append(make_batch(2))
    assert log.log_end_offset == 2
    log.close()


def test_reopening_after_an_unclean_stop_makes_the_directory_name_durable(tmp_path, fsynced):
    d = tmp_path / "data" / "t-0"
    log = Log.open(d, LogConfig())
    log.append(make_batch(2))
    log._closed = True           # the process died: no flush, no clean-shutdown marker
    for seg in log.segments:
        seg.close()
    fsynced.clear()
    log = Log.open(d, LogConfig())
    assert str(d) in fsynced and str(d.parent) in fsynced
    assert log.log_end_offset == 2 and log.recovery_point == 2
    log.close()
