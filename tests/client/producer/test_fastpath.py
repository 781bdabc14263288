"""send()'s compiled fast path (_fastpath.pyx) against its reference, the Python send():
the same records land in the same partitions in the same order with the same futures, and
everything off the common path goes back to the Python code. `make test` runs the producer
tests a second time with GREGOR_PURE_PYTHON=1, so the Python path keeps its own coverage."""
from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.client.errors import ProducerClosedError
from gregor.client.producer import fastpath
from gregor.client.producer.partitioners import murmur2
from tests.client.producer.fakes import make_producer
from tests.client.producer.test_staging import drain_all
from tests.client.producer.test_timestamps import sent_records

compiled = pytest.mark.skipif(fastpath.FastSend is None,
                              reason="GREGOR_PURE_PYTHON=1: the Python path is under test")


def test_the_compiled_path_is_built_unless_told_not_to_use_it():
    """`make venv` compiles it; a broken build must fail here, not just run slower."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        assert fastpath.FastSend is None
        p, _net, _clock = make_producer({"t": 1})
        assert p.send.__func__ is type(p).send
    else:
        assert fastpath.FastSend is not None, "the compiled send() path was not built"
        p, _net, _clock = make_producer({"t": 1})
        assert isinstance(p.send.__self__, fastpath.FastSend)
        assert isinstance(p._acc.lock, fastpath.FastLock)


@compiled
@pytest.mark.parametrize("key, expected", [
    (b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829), (b"abc", 479470107),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971)])
def test_compiled_murmur2_gives_javas_values(key, expected):
    assert fastpath.murmur2(key) == expected & 0xFFFFFFFF


@compiled
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_compiled_murmur2_agrees_with_the_python_one(key):
    assert fastpath.murmur2(key) == murmur2(key) & 0xFFFFFFFF


def _send_all(p, send, records):
    """Send (kwargs) records through `send`; futures."""
    return [send("t", **r) for r in records]


def _outcome(p, net, clock, futs):
    log = drain_all(p, net, clock)
    return log, [(f.result(0).partition, f.result(0).offset) for f in futs]


def _records(n, keyed=True, value_len=100, **extra):
    out = []
    for i in range(n):
        r = {"value": b"%d" % i + b"v" * value_len}
        if keyed:
            r["key"] = b"key-%d" % (i % 37)
        r.update(extra)
        out.append(r)
    return out


SHAPES = {
    "one partition, keyed": (1, _records(3000)),
    "six partitions, keyed": (6, _records(3000)),
    "six partitions, null keys": (6, _records(3000, keyed=False)),
    "explicit partitions": (6, [dict(r, partition=i % 4)
                                for i, r in enumerate(_records(3000))]),
    "empty and null values, empty keys": (3, [{"value": None, "key": b"k"},
                                              {"value": b"", "key": b"a"},
                                              {"value": b"x", "key": b""}] * 500),
}


@compiled
@pytest.mark.parametrize("shape", SHAPES)
def test_compiled_and_python_send_agree(shape):
    """Same records through both paths (into two producers): the same log per partition
    and the same (partition, offset) for every future. Null-key records stick to partitions
    chosen at random, so for them: every record once, in send order within its partition."""
    partitions, records = SHAPES[shape]
    runs = []
    for path in ("compiled", "python"):
        p, net, clock = make_producer({"t": partitions}, acks=1)
        p.partitions_for("t")
        send = p.send if path == "compiled" else p._py_send
        runs.append(_outcome(p, net, clock, _send_all(p, send, records)))
    (log_c, md_c), (log_py, md_py) = runs
    if shape == "six partitions, null keys":
        order = {r["value"]: i for i, r in enumerate(records)}
        for log in (log_c, log_py):
            assert sorted(v for vals in log.values() for v in vals) == sorted(order)
            assert all([order[v] for v in vals] == sorted(order[v] for v in vals)
                       for vals in log.values())
            assert len([vals for vals in log.values() if vals]) > 1
    else:
        assert log_c == log_py
        assert md_c == md_py
    assert [o for _p, o in md_c if o is not None]


@compiled
def test_callbacks_run_in_order_on_the_compiled_path():
    p, net, clock = make_producer({"t": 2}, acks=1)
    p.partitions_for("t")
    seen = []
    for i in range(200):
        p.send("t", b"v%d" % i, key=b"k%d" % (i % 3),
               callback=lambda md, err, i=i: seen.append((i, md.partition, md.offset, err)))
    drain_all(p, net, clock)
    assert [s[0] for s in seen if s[1] == 0] == sorted(s[0] for s in seen if s[1] == 0)
    assert len(seen) == 200 and all(err is None for *_x, err in seen)
    per_partition = {}
    for i, part, off, _err in seen:
        per_partition.setdefault(part, []).append(off)
    assert all(offs == list(range(len(offs))) for offs in per_partition.values())


@compiled
def test_records_off_the_common_path_go_through_the_python_code():
    """Headers, caller timestamps, str values: the Python path handles them, in order
    with the compiled path's records around them."""
    p, net, clock = make_producer({"t": 1}, acks=1)
    p.partitions_for("t")
    futs = [p.send("t", b"a"), p.send("t", b"b", headers=[("h", b"1")]),
            p.send("t", b"c", timestamp_ms=1234), p.send("t", "d"),
            p.send("t", b"e", partition=0), p.send("t", bytearray(b"f"))]
    recs = sent_records(p, net, clock)
    assert [r.value for _part, r in recs] == [b"a", b"b", b"c", b"d", b"e", b"f"]
    assert [h[0] for h in recs[1][1].headers] == ["h"]
    assert recs[2][1].timestamp == 1234
    assert [f.result(0).offset for f in futs] == list(range(6))


@compiled
def test_a_partition_out_of_range_is_the_python_paths_error():
    p, _net, _clock = make_producer({"t": 2}, acks=1)
    p.partitions_for("t")
    with pytest.raises(Exception) as compiled_err:
        p.send("t", b"v", partition=-1)
    with pytest.raises(Exception) as python_err:
        p._py_send("t", b"v", partition=-1)
    assert type(compiled_err.value) is type(python_err.value)
    assert str(compiled_err.value) == str(python_err.value)


@compiled
def test_a_busy_accumulator_lock_sends_through_the_python_path_which_waits():
    p, net, clock = make_producer({"t": 1}, acks=1)
    p.partitions_for("t")
    p.send("t", b"first")
    held = threading.Event()

    def hold():
        with p._acc.lock:
            held.set()
            time.sleep(0.2)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    t0 = time.monotonic()
    fut = p.send("t", b"second")         # the lock is taken: waits for it, then appends
    waited = time.monotonic() - t0
    t.join()
    assert waited >= 0.1
    recs = sent_records(p, net, clock)
    assert [r.value for _part, r in recs] == [b"first", b"second"]
    assert fut.result(0).offset == 1


@compiled
def test_staged_records_go_before_the_compiled_paths_next_record():
    """Keyed records the Python path staged (it does when the compiled path yields to it)
    are flushed before a later record of the topic is appended: per-key order holds."""
    p, net, clock = make_producer({"t": 4}, acks=1)
    p.partitions_for("t")
    for i in range(10):
        p._py_send("t", b"staged-%d" % i, key=b"same")      # the Python path stages these
    assert "t" in p._acc.stages
    p.send("t", b"direct", key=b"same")
    log = drain_all(p, net, clock)
    (vals,) = [v for v in log.values() if v]
    assert vals == [b"staged-%d" % i for i in range(10)] + [b"direct"]


@compiled
def test_close_detaches_the_compiled_path():
    p, _net, _clock = make_producer({"t": 1}, acks=1)
    p.partitions_for("t")
    p.close(0)
    assert "send" not in vars(p)
    with pytest.raises(ProducerClosedError):
        p.send("t", b"late")


@compiled
def test_fast_lock_behaves_like_threading_lock():
    lock = fastpath.FastLock()
    assert lock.acquire() and lock.locked()
    assert lock.acquire(False) is False
    t0 = time.monotonic()
    assert lock.acquire(True, 0.05) is False
    assert time.monotonic() - t0 >= 0.04
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        assert lock.locked()
    assert not lock.locked()
    # Another thread blocks (without the GIL) until the holder lets go.
    lock.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(lock.acquire(True, 5)))
    t.start()
    time.sleep(0.05)
    assert not got
    lock.release()
    t.join()
    assert got == [True] and lock.locked()
    lock.release()


def test_threads_sending_at_once_lose_nothing_and_keep_each_keys_order():
    """Four threads on one producer: the compiled path and the Python path it yields to when
    the lock is busy (which stages keyed records) interleave; every record arrives once and
    each thread's records of a key stay in order. Runs on either path."""
    p, net, clock = make_producer({"t": 3}, acks=1, **{"buffer.memory": 1 << 28})
    p.partitions_for("t")
    per_thread = 5000

    def produce(t):
        for i in range(per_thread):
            if i % 3 == 2:
                p.send("t", b"%d:%d" % (t, i))                    # null key: sticky
            else:
                p.send("t", b"%d:%d" % (t, i), key=b"key-%d" % (i % 5))

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = drain_all(p, net, clock)
    got = [v for vals in log.values() for v in vals]
    assert sorted(got) == sorted(b"%d:%d" % (t, i) for t in range(4) for i in range(per_thread))
    for vals in log.values():
        last = {}
        for v in vals:
            t, i = map(int, v.split(b":"))
            if i % 3 != 2:
                k = (t, i % 5)
                assert last.get(k, -1) < i
                last[k] = i
    assert p._pool.available == p._pool.total


def test_null_key_records_stick_to_a_partition_for_a_batch_then_switch():
    """Java's sticky choice on either path: records go to one partition until its batch is
    full (batch.size), then the partitioner draws again (the compiled path asks it directly)."""
    p, net, clock = make_producer({"t": 6}, acks=1)
    p.partitions_for("t")
    futs = [p.send("t", b"v" * 100) for _ in range(6000)]
    drain_all(p, net, clock)
    parts = [f.result(0).partition for f in futs]
    switches = sum(1 for a, b in zip(parts, parts[1:]) if a != b)
    per_batch = 16384 // 112                                   # ~146 records of 112 bytes
    assert 6000 // per_batch // 3 <= switches <= 2 * (6000 // per_batch)
    assert len(set(parts)) > 1


@compiled
def test_a_new_sticky_choice_counts_a_record_once_when_the_lock_is_busy():
    """The compiled path draws the sticky partition (which counts the record's bytes) and
    then finds the lock taken: the record goes on to the Python _send with that partition,
    not back through the whole Python send(), which would draw and count it again."""
    p, net, clock = make_producer({"t": 6}, acks=1)
    p.partitions_for("t")
    p.send("t", b"x" * 100)
    p._sticky_state.pop("t", None)                   # as after a batch boundary
    held = threading.Event()

    def hold():
        with p._acc.lock:
            held.set()
            time.sleep(0.1)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    fut = p.send("t", b"y" * 100)
    t.join()
    part, counted = p._sticky_state["t"]
    assert counted == 112                            # 100 bytes + 12 of record overhead
    drain_all(p, net, clock)
    assert fut.result(0).partition == part
