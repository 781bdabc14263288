"""The checker: each anomaly flagged on a small hand-made history, and clean ones left alone."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from gregor.testing.history import History, poll, send
from gregor.testing.history.checker import check

from tests.testing.history.builder import Hist

K, L = "t/0", "t/1"


def names(report):
    return set(report.errors)


def queue(n=3):
    b = Hist()
    for i in range(n):
        b.send(0, K, i, i)
    return b


def test_a_clean_queue_history_is_valid():
    b = queue()
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.poll(1, {K: [(2, 2)]})
    r = check(b.h)
    assert r.valid, r.summary()
    assert r.counts == {"send": {"ok": 3}, "poll": {"ok": 2}}


def test_a_lost_write_after_an_ack_is_caught():
    b = queue()
    b.poll(1, {K: [(0, 0), (2, 2)]})             # 1 acked at offset 1, never read; 2 read
    r = check(b.h)
    assert [e["value"] for e in r.anomalies["lost-write"]] == [1]
    assert r.anomalies["lost-write"][0]["writer"] == 3
    assert not r.valid and "lost-write" in str(r)


def test_an_info_send_never_seen_is_not_a_loss():
    b = queue(2)
    b.send(0, K, 9, type="info", error="REQUEST_TIMED_OUT")
    b.send(0, K, 10, type="fail", error="NOT_ENOUGH_REPLICAS")
    b.send(0, K, 11, 2)
    b.poll(1, {K: [(0, 0), (1, 1), (2, 11)]})
    r = check(b.h)
    assert r.valid, r.summary()


def test_an_info_send_that_was_read_is_committed_and_ordered():
    b = queue(1)
    b.send(0, K, 5, type="info", error="NOT_LEADER_OR_FOLLOWER")
    b.send(0, K, 6, 2)
    b.poll(1, {K: [(0, 0), (1, 5), (2, 6)]})
    assert check(b.h).valid


def test_unseen_acked_values_at_the_end():
    b = queue()
    b.poll(1, {K: [(0, 0), (1, 1)]})
    r = check(b.h)
    assert names(r) == {"unseen"}
    assert r.anomalies["unseen"] == [{"key": K, "count": 1, "values": [2], "writers": [5],
                                      "offsets": [2]}]
    assert check(b.h, unseen_is_error=False).valid


def test_duplicate_value_at_two_offsets():
    b = queue(2)
    b.poll(1, {K: [(0, 0), (1, 1), (2, 1)]})
    r = check(b.h)
    assert r.anomalies["duplicate"] == [{"key": K, "value": 1, "offsets": [1, 2], "writer": 3}]
    assert "duplicate" in names(r)


def test_inconsistent_offsets_across_reads():
    b = queue(2)
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.poll(2, {K: [(0, 0), (1, 7)]})
    [e] = check(b.h).anomalies["inconsistent-offsets"]
    assert e["key"] == K and e["offset"] == 1 and e["values"] == [1, 7]


def test_aborted_read_g1a():
    b = Hist()
    b.txn(0, [send(K, 1, 0), send(K, 2, 1)], type="fail", error="aborted", aborted=True)
    b.txn(0, [send(K, 3, 3)])
    b.poll(1, {K: [(1, 2), (3, 3)]})
    r = check(b.h)
    assert [(e["value"], e["writer"]) for e in r.anomalies["G1a"]] == [(2, 1)]
    assert names(r) == {"G1a"}


def test_aborted_transactions_and_markers_are_not_skips():
    b = Hist()
    b.txn(0, [send(K, 1, 0), send(K, 2, 1)])                    # marker at 2
    b.txn(0, [send(K, 3, 3)], type="fail", error="aborted", aborted=True)   # marker at 4
    b.txn(0, [send(K, 4, 5), send(L, 5, 0)])
    b.poll(1, {K: [(0, 1), (1, 2)]})
    b.poll(1, {K: [(5, 4)], L: [(0, 5)]})
    r = check(b.h)
    assert r.valid, r.summary()


def test_precommitted_read():
    b = Hist()
    b.txn(0, [send(K, 1, 0), poll({K: [(0, 1)]})])
    assert "precommitted-read" in names(check(b.h))


def test_poll_skip_and_nonmonotonic_poll_across_ops():
    b = queue(4)
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.poll(1, {K: [(3, 3)]})                      # skipped offset 2
    b.poll(2, {K: [(0, 0), (1, 1), (2, 2)]})
    b.poll(2, {K: [(1, 1)]})                      # went back
    r = check(b.h, unseen_is_error=False)
    assert [e["offsets"] for e in r.anomalies["poll-skip"]] == [[1, 3]]
    assert [e["offsets"] for e in r.anomalies["nonmonotonic-poll"]] == [[2, 1]]
    assert names(r) == {"poll-skip", "nonmonotonic-poll"}


def test_an_assignment_or_a_rebalance_resets_the_expectation():
    b = queue(4)
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.assign(1, [K], seek_to_beginning=True)
    b.poll(1, {K: [(0, 0)]})
    b.poll(1, {K: [(3, 3)]}, rebalance_log=[{"keys": [K]}])   # another member had read 1-2
    b.poll(2, {K: [(0, 0), (1, 1), (2, 2)]})
    b.poll(2, {K: [(3, 3)]}, type="info")
    b.poll(2, {K: [(1, 1)]})                      # after an info poll the position is unknown
    assert check(b.h).valid


def test_a_rebalance_recorded_in_a_send_resets_that_process_polls():
    b = queue(4)
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.op(1, "send", [send(L, 9)], "ok", [send(L, 9, 0)], rebalance_log=[{"keys": [K]}])
    b.poll(1, {K: [(3, 3)], L: [(0, 9)]})
    b.poll(2, {K: [(0, 0), (1, 1), (2, 2)]})
    assert check(b.h).valid


def test_int_poll_skip_and_int_nonmonotonic_poll():
    b = queue(3)
    b.poll(1, {K: [(0, 0), (2, 2)]})
    b.poll(2, {K: [(1, 1), (0, 0), (1, 1), (2, 2)]})
    r = check(b.h)
    assert [e["offsets"] for e in r.anomalies["int-poll-skip"]] == [[0, 2]]
    assert [e["offsets"] for e in r.anomalies["int-nonmonotonic-poll"]] == [[1, 0]]


def test_rebalance_inside_an_op_exempts_its_keys():
    b = queue(3)
    b.poll(1, {K: [(0, 0), (2, 2), (1, 1), (2, 2)]}, rebalance_log=[{"keys": [K]}])
    r = check(b.h)
    assert not r.anomalies["int-poll-skip"] and not r.anomalies["int-nonmonotonic-poll"]


def test_sends_out_of_order():
    b = Hist()
    b.txn(0, [send(K, 1, 0), send(K, 2, 2)])      # another producer wrote offset 1
    b.send(1, K, 9, 1)
    b.txn(2, [send(K, 3, 4), send(K, 4, 3)])      # inside one op, backwards
    b.send(3, K, 5, 6)
    b.send(3, K, 6, 5)                            # across ops of one process, backwards
    b.poll(4, {K: [(0, 1), (1, 9), (2, 2), (3, 4), (4, 3), (5, 6), (6, 5)]})
    r = check(b.h)
    assert [e["offsets"] for e in r.anomalies["int-send-skip"]] == [[0, 2]]
    assert "int-send-skip" not in names(r)        # allowed: other producers interleave
    assert [e["offsets"] for e in r.anomalies["int-nonmonotonic-send"]] == [[4, 3]]
    assert "nonmonotonic-send" in names(r)
    assert {e["offsets"][1] for e in r.anomalies["nonmonotonic-send"]} == {5}


def test_g1c_circular_information_flow():
    b = Hist()
    h = b.h
    a = h.invoke(0, "txn", [send(K, 1), ("poll",)])
    c = h.invoke(1, "txn", [send(L, 2), ("poll",)])
    h.complete(a, "ok", [send(K, 1, 0), poll({L: [(0, 2)]})])
    h.complete(c, "ok", [send(L, 2, 0), poll({K: [(0, 1)]})])
    r = check(b.h)
    [cycle] = r.anomalies["G1c"]
    assert sorted(cycle["ops"]) == [2, 3] and {s["edge"] for s in cycle["steps"]} == {"wr"}
    assert "G1c" in names(r)


def test_g0_is_reported_but_allowed():
    b = Hist()
    h = b.h
    a = h.invoke(0, "txn", [send(K, 1), send(L, 2)])
    c = h.invoke(1, "txn", [send(K, 3), send(L, 4)])
    h.complete(a, "ok", [send(K, 1, 0), send(L, 2, 1)])
    h.complete(c, "ok", [send(K, 3, 1), send(L, 4, 0)])
    b.poll(2, {K: [(0, 1), (1, 3)], L: [(0, 4), (1, 2)]})
    r = check(b.h)
    assert len(r.anomalies["G0"]) == 1 and r.valid, r.summary()
    assert "G0 (allowed)" in r.summary()


def test_g0_realtime_an_acked_record_after_a_later_send():
    b = Hist()
    b.send(0, K, 1, 5)
    b.send(1, K, 2, 3)                           # invoked after 1 was acked, lands before it
    b.poll(2, {K: [(3, 2), (5, 1)]})
    [e] = check(b.h).anomalies["G0-realtime"]
    assert (e["acked_offset"], e["later_offset"]) == (5, 3)
    b2 = Hist()                                  # concurrent sends may land in either order
    a = b2.h.invoke(0, "send", [send(K, 1)])
    c = b2.h.invoke(1, "send", [send(K, 2)])
    b2.h.complete(a, "ok", [send(K, 1, 5)])
    b2.h.complete(c, "ok", [send(K, 2, 3)])
    b2.poll(2, {K: [(3, 2), (5, 1)]})
    assert check(b2.h).valid


def test_g1c_realtime_a_read_from_the_future():
    b = Hist()
    b.poll(1, {K: [(0, 7)]})
    b.send(0, K, 7, 0)
    assert "G1c-realtime" in names(check(b.h))


def test_availability_figures_from_events():
    b = Hist()
    b.send(0, K, 0, 0)                            # t 1-2 ms
    b.event("fault-start", kind="isolate")       # t 3
    b.send(0, K, 1, type="info", error="REQUEST_TIMED_OUT")   # 4-5
    b.send(0, K, 2, type="info", error="REQUEST_TIMED_OUT")   # 6-7
    b.event("heal")                              # t 8
    b.send(0, K, 3, 1)                            # 9-10
    b.poll(1, {K: [(0, 0), (1, 3)]}, final=True)
    av = check(b.h).availability
    assert av["acknowledged_fraction"] == 0.5 and av["healthy_acknowledged_fraction"] == 1.0
    assert av["longest_outage_s"] == 0.008 and av["longest_outage_at_s"] == [0.001, 0.009]
    assert av["recovery_s"] == 0.002


def test_json_lines_give_the_same_report():
    b = queue()
    b.poll(1, {K: [(0, 0), (2, 2)]})
    back = History.loads(b.h.dumps())
    assert check(back).to_json() == check(b.h).to_json()


# --- properties: a simulated correct log is clean; hiding one acked record is caught ---

@st.composite
def runs(draw):
    steps = draw(st.lists(st.tuples(st.sampled_from(["send", "poll"]), st.integers(0, 2),
                                    st.sampled_from([K, L]),
                                    st.sampled_from(["ok", "ok", "ok", "info-written",
                                                     "info-lost", "fail"]),
                                    st.integers(1, 3)), min_size=1, max_size=40))
    return steps


def simulate(steps, hide=None):
    b = Hist()
    log = {K: [], L: []}
    position = {}
    value = 0
    for f, proc, k, outcome, n in steps:
        if f == "send":
            value += 1
            if outcome in ("ok", "info-written"):
                log[k].append(value)
            if outcome == "ok":
                b.send(proc, k, value, len(log[k]) - 1)
            elif outcome == "fail":
                b.send(proc, k, value, type="fail", error="INVALID_RECORD")
            else:
                b.send(proc, k, value, type="info", error="REQUEST_TIMED_OUT")
        else:
            p = 10 + proc
            start = position.get((p, k), 0)
            recs = [(o, v) for o, v in enumerate(log[k][start:start + n], start)
                    if v != hide]
            position[(p, k)] = start + n if start + n <= len(log[k]) else len(log[k])
            b.poll(p, {k: recs})
    b.poll(99, {k: [(o, v) for o, v in enumerate(vs) if v != hide] for k, vs in log.items()},
           final=True)
    return b, log


@settings(max_examples=30, deadline=None)
@given(runs())
def test_a_correct_log_is_always_valid(steps):
    b, _ = simulate(steps)
    r = check(b.h)
    assert r.valid, r.summary()


@settings(max_examples=30, deadline=None)
@given(runs(), st.data())
def test_an_acked_record_missing_from_every_read_is_reported(steps, data):
    b, log = simulate(steps)
    acked = [sv for op in b.h.ops if op.f == "send" and op.type == "ok"
             for _, _, sv in op.sends()]
    if not acked:
        return
    victim = data.draw(st.sampled_from(acked))
    b, _ = simulate(steps, hide=victim)
    r = check(b.h)
    assert not r.valid
    flagged = {e["value"] for e in r.anomalies["lost-write"]} | \
        {v for e in r.anomalies["unseen"] for v in e["values"]}
    assert victim in flagged


def test_the_command_line_checks_a_history_file(tmp_path, capsys):
    from gregor.testing.history.__main__ import main
    b = queue()
    b.poll(1, {K: [(0, 0), (2, 2)]})
    b.h.dump(tmp_path / "lost.jsonl")
    assert main([str(tmp_path / "lost.jsonl")]) == 1
    assert "lost-write: 1" in capsys.readouterr().out
    b = queue()
    b.poll(1, {K: [(0, 0), (1, 1)]})
    b.h.dump(tmp_path / "short.jsonl")
    assert main([str(tmp_path / "short.jsonl")]) == 1            # value 2 unseen
    assert main([str(tmp_path / "short.jsonl"), "--no-final-read"]) == 0
