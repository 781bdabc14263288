"""The history model: ops, the thread-safe history, JSON lines, the recorder."""
from __future__ import annotations

import asyncio
import threading

import pytest

from gregor.testing.history import History, Op, Recorder, key, poll, send, split_key


def test_keys_round_trip():
    assert key("orders", 3) == "orders/3"
    assert split_key("a/b/2") == ("a/b", 2)
    assert send(("t", 1), 5) == ("send", "t/1", 5)
    assert send("t/1", 5, 9) == ("send", "t/1", (9, 5))
    with pytest.raises(ValueError):
        split_key("nopartition")


def test_micro_op_accessors():
    op = Op(0, 0, 1, "ok", "txn",
            [send("t/0", 1, 4), poll({("t", 0): [(3, 0), (4, 1)]}), send("t/1", 2)])
    assert op.sends() == [("t/0", 4, 1), ("t/1", None, 2)]
    assert op.reads() == [("t/0", 3, 0), ("t/0", 4, 1)]


def test_json_lines_round_trip(tmp_path):
    h = History()
    p = h.new_process()
    inv = h.invoke(p, "txn", [send("t/0", 1), poll()])
    h.complete(inv, "ok", [send("t/0", 1, 7), poll({"t/1": [(0, 3)]})], abort=False)
    inv = h.invoke(p, "assign", ["t/0", "t/1"], seek_to_beginning=True)
    h.complete(inv, "info", error="REQUEST_TIMED_OUT")
    h.event("partition", {"cut": [["b1", "zk"]]})
    h.dump(tmp_path / "h.jsonl")
    back = History.load(tmp_path / "h.jsonl")
    assert back.ops == h.ops
    assert back.new_process() == p + 1


def test_invoke_twice_on_one_process_is_refused():
    h = History()
    h.invoke(0, "send", [send("t/0", 1)])
    with pytest.raises(ValueError):
        h.invoke(0, "poll", [poll()])


def test_many_threads_and_tasks_append_safely():
    h = History()

    def worker():
        rec = Recorder(h)
        for i in range(200):
            with rec.op("send", [send("t/0", i)]) as op:
                op.value = [send("t/0", i, i)]

    async def task(rec):
        for _ in range(200):
            with rec.op("poll", [poll()]) as op:
                await asyncio.sleep(0)
                op.value = [poll({})]

    async def tasks():
        await asyncio.gather(*(task(Recorder(h)) for _ in range(4)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    asyncio.run(tasks())
    for t in threads:
        t.join()
    ops = h.ops
    assert [op.index for op in ops] == list(range(3200))
    assert all(b is not None and b.type == "ok" for _, b in h.pairs())
    assert len(h.pairs()) == 1600


def test_recorder_completes_on_every_path():
    h = History()

    def classify(exc):
        if isinstance(exc, KeyError):
            return "fail", "UNKNOWN_TOPIC_OR_PART"
        if isinstance(exc, TimeoutError):
            return "info", "REQUEST_TIMED_OUT"
        return None

    rec = Recorder(h, classify=classify)
    with rec.op("send", [send("t/0", 1)]):
        raise KeyError("t")
    with rec.op("txn", [send("t/0", 2), send("t/0", 3)]) as op:
        op.value = [send("t/0", 2, 10), send("t/0", 3)]   # first offset learned, then a timeout
        raise TimeoutError()
    with pytest.raises(ZeroDivisionError):
        with rec.op("poll", [poll()]):
            1 / 0
    with rec.op("poll", [poll()]) as op:
        op.fail("aborted", [poll({})])
    done = [b for _, b in h.pairs()]
    assert [(b.type, b.error) for b in done] == [
        ("fail", "UNKNOWN_TOPIC_OR_PART"), ("info", "REQUEST_TIMED_OUT"),
        ("info", "ZeroDivisionError: division by zero"), ("fail", "aborted")]
    assert done[1].sends() == [("t/0", 10, 2), ("t/0", None, 3)]   # the partial value is kept


def test_an_open_invoke_counts_as_info():
    h = History()
    h.invoke(0, "send", [send("t/0", 1)])
    [op] = h.completions()
    assert op.type == "info" and op.sends() == [("t/0", None, 1)]
