"""The exactly-once sink when the Spark driver is killed (SIGKILL, the whole process group of
driver, executors and Python workers) at the points that matter, then restarted from its
checkpoint: read_committed readers see every input row once, none missing, none duplicated.

One query, one checkpoint, four runs of tests/spark/eos_kill_driver.py (a Spark start costs
seconds, so the kill points share the runs):
1. killed in micro-batch 1 while its tasks write: task 0 finished (records and batch-id offset
   in a transaction left open for the driver), task 1 half-way;
2. the restart replays batch 1; killed in batch 2 after the driver committed task 0's
   transaction but not task 1's;
3. the restart replays batch 2 (task 0 finds it committed and writes nothing, task 1 writes
   again); killed in batch 3 after every transaction committed, before Spark's commit log;
4. the restart replays batch 3, which writes nothing, and runs to the end.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

DRIVER = Path(__file__).with_name("eos_kill_driver.py")
ROOT = DRIVER.parents[2]
PER_PARTITION = 1500            # source rows per partition (2 partitions)
CAP = 600                       # maxOffsetsPerTrigger: 300 rows per task, 5 micro-batches
RUN_TIMEOUT = 180               # a driver run that neither reaches its point nor ends


def _session_pids(sid: int) -> list[int]:
    """Processes of session `sid` (the driver started it; Spark's Python daemon moves its
    workers to a process group of its own, but not to another session)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:           # state ppid pgrp session ...
            out.append(int(d.name))
    return out


def _kill_session(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's process group first (the driver and its JVM die at once, as on a
    lost machine), then whatever of its session remains (the Python workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)
    deadline = time.monotonic() + 30
    while (pids := _session_pids(proc.pid)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    assert not _session_pids(proc.pid), "processes of the killed driver survived"


def _driver(bootstrap, src, dst, ck, marks: Path, kill_at: str | None):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GREGOR_TEST_KILL_AT", None)
    if kill_at:
        env["GREGOR_TEST_KILL_AT"] = kill_at
    env["GREGOR_TEST_MARKS"] = str(marks)
    log = open(marks / f"driver-{kill_at or 'final'}.log".replace(":", "-"), "w+b")
    proc = subprocess.Popen([sys.executable, str(DRIVER), bootstrap, src, dst, ck, str(CAP)],
                            env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
    return proc, log


def _output(log) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")[-6000:]


def _run_until(bootstrap, src, dst, ck, marks: Path, kill_at: str, points: list[str]) -> None:
    """Run the driver until every point in `points` is marked, then kill it."""
    proc, log = _driver(bootstrap, src, dst, ck, marks, kill_at)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not all((marks / p).exists() for p in points):
            if proc.poll() is not None:
                pytest.fail(f"the driver ended (rc {proc.returncode}) before {points} of "
                            f"{kill_at}:\n{_output(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {points} of {kill_at} within {RUN_TIMEOUT} s:\n{_output(log)}")
            time.sleep(0.05)
    finally:
        _kill_session(proc)
        log.close()


def _source_ends(ck: str, batch: int, src: str) -> dict[int, int]:
    """The source offsets micro-batch `batch` reads up to, from the checkpoint's offset log."""
    lines = (Path(ck) / "offsets" / str(batch)).read_text().splitlines()
    return {int(p): o for p, o in json.loads(lines[-1])[src].items()}


def _inputs_below(ends: dict[int, int]) -> list[int]:
    """The source rows (value i sits in partition i % 2 at offset i // 2) below `ends`."""
    return sorted(2 * o + p for p, end in ends.items() for o in range(end))


def _read(bootstrap, topic, isolation="read_committed") -> list[int]:
    """Every record of the topic a reader with `isolation` sees, up to its end offsets
    (the last stable offsets for read_committed)."""
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                  "fetch.max.wait.ms": 100})
    try:
        tps = [(topic, p) for p in range(2)]
        ends = c.end_offsets(tps)
        c.assign([(topic, p, -2) for p in range(2)])
        out, deadline = [], time.monotonic() + 60
        while any(c.position(t, p) < ends[(t, p)] for t, p in tps):
            assert time.monotonic() < deadline, f"reading {topic} stalled below {ends}"
            out.extend(int(r.value) for r in c.poll(0.5))
        return sorted(out)
    finally:
        c.close()


def _read_confluent(bootstrap, topic) -> list[int]:
    """The same with librdkafka (isolation.level=read_committed): a judge that is not ours."""
    ck = pytest.importorskip("confluent_kafka")
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"judge-{topic}",
                     "isolation.level": "read_committed", "enable.partition.eof": True,
                     "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(2)])
        out, eof, deadline = [], set(), time.monotonic() + 60
        while len(eof) < 2:
            assert time.monotonic() < deadline, "librdkafka never reached the end"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == ck.KafkaError._PARTITION_EOF, m.error()
                eof.add(m.partition())
                continue
            out.append(int(m.value()))
        return sorted(out)
    finally:
        c.close()


def _open_transactions(bootstrap, topic) -> bool:
    """Whether some partition of the topic holds records of a transaction still open
    (its last stable offset is behind its high watermark)."""
    from gregor.client.consumer import Consumer
    ends = []
    for iso in ("read_uncommitted", "read_committed"):
        c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": iso})
        try:
            ends.append(c.end_offsets([(topic, p) for p in range(2)]))
        finally:
            c.close()
    return ends[0] != ends[1]


def _settled(bootstrap, topic) -> bool:
    """Wait until no transaction is open on the topic: EndTxn returns before the coordinator
    has written the commit markers. False if one is still open after 30 s."""
    deadline = time.monotonic() + 30
    while _open_transactions(bootstrap, topic):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _progress(bootstrap, group, topic) -> int:
    """The batch id the sink task owning `group` has committed (the offset of partition 0 of
    the sink topic; a commit still pending in an open transaction does not count), read with
    librdkafka."""
    ck = pytest.importorskip("confluent_kafka")
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "isolation.level": "read_uncommitted", "enable.auto.commit": False})
    try:
        return c.committed([ck.TopicPartition(topic, 0)], timeout=30)[0].offset
    finally:
        c.close()


def _eventually(fn, want, timeout=30.0):
    deadline = time.monotonic() + timeout
    while (got := fn()) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return got


def _dupes(rows: list[int]) -> list[int]:
    return sorted({r for r in rows if rows.count(r) > 1})[:10]


def test_killed_driver_restarts_from_its_checkpoint_exactly_once(bootstrap, make_topic,
                                                                   tmp_path):
    from gregor.client.producer import Producer
    src, dst = make_topic(2), make_topic(2)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(2 * PER_PARTITION):
        p.send(src, b"%d" % i, partition=i % 2)
    p.flush()
    p.close()
    everything = list(range(2 * PER_PARTITION))
    ck = str(tmp_path / "ck")
    marks = tmp_path / "marks"
    marks.mkdir()
    commits = Path(ck) / "commits"

    # 1. killed while batch 1 is being written
    _run_until(bootstrap, src, dst, ck, marks, "tasks:1", ["task0-prepared", "task1-blocked"])
    assert _open_transactions(bootstrap, dst), "task 0's transaction was not left open"
    got = _read(bootstrap, dst)
    assert got == _inputs_below(_source_ends(ck, 0, src)), \
        "read_committed shows rows of the unfinished batch 1, or lacks rows of batch 0"

    # 2. the restart replays batch 1; killed half-way through committing batch 2
    _run_until(bootstrap, src, dst, ck, marks, "commit-half:2", ["commit-half"])
    got = _read(bootstrap, dst)
    upto1 = _inputs_below(_source_ends(ck, 1, src))
    upto2 = set(_inputs_below(_source_ends(ck, 2, src)))
    assert not _dupes(got), f"duplicated rows after the replay of batch 1: {_dupes(got)}"
    assert set(upto1) <= set(got) <= upto2, "batch 1 is not whole, or rows beyond batch 2"
    # task 0's transaction of batch 2 is committed, task 1's is not (its rows may sit behind
    # task 1's open transaction in a partition, so the progress offsets tell, not the rows)
    task0 = (marks / "commit-half").read_text()
    task1 = task0.rsplit("-", 1)[0] + "-1"
    assert _eventually(lambda: _progress(bootstrap, task0, dst), 2) == 2
    assert _progress(bootstrap, task1, dst) == 1

    # 3. the restart replays batch 2 (task 0's part is already there); killed in batch 3
    #    after the sink committed it, before Spark's commit log records it
    _run_until(bootstrap, src, dst, ck, marks, "committed:3", ["committed"])
    assert not (commits / "3").exists()
    assert _settled(bootstrap, dst), "a transaction of batch 3 is still open"
    got = _read(bootstrap, dst)
    assert not _dupes(got), f"duplicated rows after the replay of batch 2: {_dupes(got)}"
    assert got == _inputs_below(_source_ends(ck, 3, src))
    written_before = len(_read(bootstrap, dst, "read_uncommitted"))

    # 4. the unmodified sink replays batch 3, which writes nothing, then runs to the end
    proc, log = _driver(bootstrap, src, dst, ck, marks, None)
    try:
        rc = proc.wait(RUN_TIMEOUT)
        out = _output(log)
    finally:
        _kill_session(proc)
        log.close()
    assert rc == 0, out
    ran = [line for line in out.splitlines() if line.startswith("batches ")]
    assert ran and ran[-1].split()[1].startswith("3:"), f"batch 3 was not replayed: {ran}"
    assert _settled(bootstrap, dst), "a transaction is still open"
    got = _read(bootstrap, dst)
    assert not _dupes(got), f"duplicated rows: {_dupes(got)}"
    assert got == everything, f"{len(got)} rows, {len(set(everything) - set(got))} missing"
    assert _read_confluent(bootstrap, dst) == everything
    # the replayed batch 3 wrote nothing, not even aborted records: only batch 4 was added
    last = _inputs_below(_source_ends(ck, 3, src))
    assert len(_read(bootstrap, dst, "read_uncommitted")) - written_before == \
        len(everything) - len(last)
