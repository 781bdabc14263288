"""A crash at every step of the swap: recovery leaves the old segments or the new one."""
from __future__ import annotations

import os

import pytest

from gregor.log.cleaner.swap import CrashPoint

from tests.log.compaction_helpers import clean, keyed_batch, open_log, records

WRITES = [(b"k%d" % (i % 3), b"v%d" % i) for i in range(12)]


def _build(directory):
    log = open_log(directory)
    txn = dict(producer_id=9, producer_epoch=0, transactional=True)
    for i, (k, v) in enumerate(WRITES):
        log.append(keyed_batch([(k, v)], ts=1_000 + i))
        if i % 3 == 2:
            log.roll()
    log.append(keyed_batch([(b"k0", b"aborted")], base_sequence=0, **txn))
    from tests.log.compaction_helpers import marker
    log.append(marker(False, 9))
    log.roll()
    log.append(keyed_batch([(b"tail", b"t")]))
    return log


def _steps(tmp_path):
    names = []
    log = _build(tmp_path / "probe")
    clean(log, hook=names.append)
    after = records(log)
    log.close()
    return names, after


def test_crash_at_every_step_of_the_swap(tmp_path):
    steps, after = _steps(tmp_path)
    assert steps[0] == "cleaned" and "committed" in steps and steps[-1] == "final .log"
    for i, step in enumerate(steps):
        directory = tmp_path / f"crash-{i}"
        log = _build(directory)
        before = records(log)

        def hook(name, step=step):
            if name == step:
                raise CrashPoint(name)
        with pytest.raises(CrashPoint):
            clean(log, hook=hook)
        log.abandon()
        recovered = open_log(directory)
        got = records(recovered)
        committed = steps.index("committed") <= i
        assert got == (after if committed else before), step
        assert recovered.log_end_offset == len(WRITES) + 3
        assert recovered.collect_aborted_transactions(0, 100) == [(9, 12)], step
        leftovers = [n for n in os.listdir(directory)
                     if n.endswith((".cleaned", ".swap", ".deleted"))]
        assert leftovers == []
        # the recovered log cleans on to the same result
        clean(recovered)
        assert records(recovered) == after
        recovered.close()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_torn_swap_is_discarded_and_old_segments_restored(tmp_path, damage):
    steps, _ = _steps(tmp_path)
    directory = tmp_path / "p-0"
    log = _build(directory)
    before = records(log)
    crash_at = next(s for s in steps if s.startswith("deleted"))  # some old ones moved away

    def hook(name):
        if name == crash_at:
            raise CrashPoint(name)
    with pytest.raises(CrashPoint):
        clean(log, hook=hook)
    log.abandon()
    swap = [n for n in os.listdir(directory) if n.endswith(".log.swap")]
    assert len(swap) == 1
    path = directory / swap[0]
    size = os.path.getsize(path)
    if damage == "truncate":
        os.truncate(path, size - 7)
    else:
        with open(path, "r+b") as f:
            f.seek(size - 3)
            b = f.read(1)
            f.seek(size - 3)
            f.write(bytes([b[0] ^ 0xFF]))
    recovered = open_log(directory)
    assert records(recovered) == before
    assert not recovered.recovery_report.segments_deleted
    recovered.close()


def test_torn_cleaned_file_is_deleted(tmp_path):
    directory = tmp_path / "p-0"
    log = _build(directory)
    before = records(log)

    def hook(name):
        if name == "cleaned":
            raise CrashPoint(name)
    with pytest.raises(CrashPoint):
        clean(log, hook=hook)
    log.abandon()
    cleaned = [n for n in os.listdir(directory) if n.endswith(".log.cleaned")]
    assert cleaned
    os.truncate(directory / cleaned[0], 10)
    recovered = open_log(directory)
    assert records(recovered) == before
    assert not any(n.endswith(".cleaned") for n in os.listdir(directory))
    recovered.close()
