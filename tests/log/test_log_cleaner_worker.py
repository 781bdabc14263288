"""The cleaner's worker process keeps out of the broker's way: it runs at idle priority from its
first instruction, without BLAS helper threads, and pauses between batches when a thread waits
for a CPU (Pacer)."""
from __future__ import annotations

import os
import sys

import pytest

from gregor.log import LogConfig
from gregor.log.cleaner import OffsetMap
from gregor.log.cleaner.cleaner import (CleanPass, Pacer, cleanable, commit, cpu_wanted,
                                        prepare)

from tests.log.compaction_helpers import keyed_batch, open_log, records


def test_pacer_sleeps_once_per_run_of_work():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    pace = Pacer(run=0.001, pause=0.0001, clock=lambda: now[0], sleep=sleep)
    for _ in range(9):                  # 0.9 ms of work: no pause yet
        now[0] += 0.0001
        pace()
    assert slept == []
    now[0] += 0.0001
    pace()                              # 1 ms of work since the start
    assert slept == [0.0001] and pace.pauses == 1
    pace()                              # the run starts again after the pause
    assert pace.pauses == 1


def test_pacer_pauses_only_when_a_thread_waits_for_a_cpu():
    now = [0.0]
    slept = []
    waiting = [False]

    def sleep(s):
        slept.append(s)
        now[0] += s

    pace = Pacer(run=0.001, pause=0.0001, clock=lambda: now[0], sleep=sleep,
                 wanted=lambda: waiting[0])
    for _ in range(30):                 # 3 ms of work, nobody waiting: no pause
        now[0] += 0.0001
        pace()
    assert slept == []
    waiting[0] = True
    for _ in range(10):
        now[0] += 0.0001
        pace()
    assert slept == [0.0001]


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="Linux's /proc/loadavg")
def test_cpu_wanted_reads_the_running_count():
    wanted = cpu_wanted()
    try:
        assert wanted() in (True, False)
    finally:
        wanted.close()


def test_a_paced_pass_keeps_the_same_records(tmp_path):
    def fill(log):
        for i in range(300):
            log.append(keyed_batch([(b"k%d" % (i % 7), b"v%d" % i)], ts=1_000 + i))
            if i % 50 == 49:
                log.roll()

    def run(path, pace):
        log = open_log(str(path), segment_bytes=1 << 12)
        fill(log)
        c = cleanable(log, None, 10_000)
        stats = CleanPass(prepare(log, c, 10_000), OffsetMap(1 << 20), shares_gil=False,
                          pace=pace).run(lambda group, new: commit(log, group, new,
                                                                   sync_dir=False))
        out = records(log)
        log.close()
        return stats, out

    calls = []
    paced_stats, paced = run(tmp_path / "a", lambda: calls.append(1))
    plain_stats, plain = run(tmp_path / "b", None)
    assert calls                                   # called between batches
    assert paced == plain
    assert paced_stats.end_offset == plain_stats.end_offset > 0


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "SCHED_IDLE"),
                    reason="scheduling policies are Linux's")
def test_worker_process_runs_at_idle_priority_with_one_thread(tmp_path):
    from gregor.log.cleaner.worker import PassSpec, WorkerProcess
    w = WorkerProcess()
    w.start()
    try:
        pid = w.proc.pid
        # an empty pass: once it is answered the worker has imported everything (numpy too)
        stats, written = w.run(PassSpec(str(tmp_path), LogConfig(), 0, 0, [], [], {}, 0,
                                        1 << 16, 0.0))
        assert written == [] and stats.end_offset == 0
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE
        assert os.listdir(f"/proc/{pid}/task") == [str(pid)]      # no BLAS helper threads
        w.start()                                  # already running: the same process
        assert w.proc.pid == pid
    finally:
        w.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_worker_holds_the_pass_files_until_released(tmp_path):
    # freeing a replaced segment's pages happens at the last close of its file: the worker's
    # close, at idle priority, after the broker has swapped and closed its own descriptors
    from gregor.log.cleaner.worker import WorkerProcess, spec_of
    log = open_log(str(tmp_path / "t-0"), segment_bytes=1 << 12)
    for i in range(200):
        log.append(keyed_batch([(b"k%d" % (i % 7), b"v%d" % i)], ts=1_000 + i))
    log.roll()
    snap = prepare(log, cleanable(log, None, 10_000), 10_000)
    spec = spec_of(snap, 1 << 20, 0.0)
    snap.close()
    w = WorkerProcess()
    try:
        stats, written = w.run(spec)
        assert written and stats.end_offset > 0

        def held():
            out = []
            for fd in os.listdir(f"/proc/{w.proc.pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{w.proc.pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(log.dir) and target.endswith(".log"):
                    out.append(target)
            return out
        assert len(held()) == len(spec.segments)
        w.release()
        assert held() == []
        w.release()                                # nothing held: still answered
    finally:
        w.kill()
        log.close()
