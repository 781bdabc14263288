"""Transactions in the log: the first unstable offset (which bounds the LSO) and the
aborted-transaction index, held to a simple model for any interleaving of producers, markers,
segment rolls and crashes."""
from __future__ import annotations

import os
import time

from hypothesis import given, settings, strategies as st

from gregor.log import Log, LogConfig
from gregor.log.txn_index import SUFFIX, TxnIndex
from gregor.protocol.records.batch import encode_control_batch
from tests.log.batches import make_batch

PIDS = (10, 11, 12)

ops = st.lists(st.one_of(
    st.tuples(st.just("data"), st.sampled_from(PIDS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("commit"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("abort"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("roll"), st.just(0), st.just(0)),
    st.tuples(st.just("crash"), st.just(0), st.just(0)),
), max_size=40)


def _config():
    return LogConfig.from_dict({"segment.bytes": 100_000})


@settings(max_examples=60, deadline=None)
@given(ops)
def test_lso_and_aborted_index_match_a_model(tmp_path_factory, steps):
    d = str(tmp_path_factory.mktemp("txnlog"))
    log = Log.open(d, _config())
    seq = dict.fromkeys(PIDS, 0)
    open_first: dict[int, int] = {}          # pid -> first offset of its open transaction
    aborted: list[tuple[int, int, int]] = []  # (pid, first, marker offset)
    for op, pid, n in steps:
        if op == "data":
            start = log.log_end_offset
            log.append(make_batch(n, producer_id=pid, producer_epoch=0, base_sequence=seq[pid],
                                  transactional=True))
            seq[pid] += n
            open_first.setdefault(pid, start)
        elif op == "plain":
            log.append(make_batch(n))
        elif op in ("commit", "abort") and pid in open_first:
            at = log.log_end_offset
            log.append(bytearray(encode_control_batch(op == "commit", producer_id=pid,
                                                      producer_epoch=0)))
            first = open_first.pop(pid)
            if op == "abort":
                aborted.append((pid, first, at))
        elif op == "roll":
            log.roll()
        elif op == "crash":
            log.abandon()
            log = Log.open(d, _config())
        want_fuo = min(open_first.values()) if open_first else None
        assert log.first_unstable_offset() == want_fuo
        end = log.log_end_offset
        for start in range(0, end + 1, 3):
            want = sorted((p, f) for p, f, m in aborted if m >= start and f < end)
            assert sorted(log.collect_aborted_transactions(start, end)) == want
    log.close()


def test_index_files_follow_kafkas_layout_and_survive_truncation(tmp_path):
    d = str(tmp_path)
    log = Log.open(d, _config())
    now = int(time.time() * 1000)      # recent: no time-based roll between the two
    log.append(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=0,
                          transactional=True, timestamp=now))
    log.append(bytearray(encode_control_batch(False, producer_id=5, producer_epoch=0,
                                              timestamp_ms=now)))
    files = [f for f in os.listdir(d) if f.endswith(SUFFIX)]
    assert files == [f"{0:020d}{SUFFIX}"]
    data = open(os.path.join(d, files[0]), "rb").read()
    import struct
    assert struct.unpack(">hqqqq", data) == (0, 5, 0, 2, 3)
    assert log.collect_aborted_transactions(0, 3) == [(5, 0)]
    log.truncate_to(2)                     # the marker goes: so does its entry
    assert log.collect_aborted_transactions(0, 3) == []
    assert not os.path.exists(os.path.join(d, files[0]))
    log.close()


def test_a_torn_index_entry_is_dropped(tmp_path):
    idx = TxnIndex(str(tmp_path))
    idx.append(0, 1, 0, 5, 6)
    path = os.path.join(str(tmp_path), f"{0:020d}{SUFFIX}")
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x01")
    again = TxnIndex(str(tmp_path))
    again.load([0], log_end=10)
    assert again.collect(0, 10) == [(1, 0)]
    assert os.path.getsize(path) == 34
