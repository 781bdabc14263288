"""The aborted-transaction index of a replica that appends whole fetched chunks.

A leader appends one batch at a time; a follower appends what one fetch returned, which may
hold a transaction's first batch, its ABORT marker, other producers' batches and the previous
transaction's marker all at once. Each replica's index must be what its log implies, batch by
batch (gregor.testing.txn_index_check recomputes that from the `.log` files alone), and so the
same on every replica."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from gregor.log import Log, LogConfig
from gregor.protocol.records.batch import encode_control_batch
from gregor.testing.txn_index_check import check_partition_txn_index
from tests.log.batches import make_batch, read_all, split_batches


def _config():
    return LogConfig.from_dict({"segment.bytes": 100_000})


class Leader:
    """A leader log fed batch by batch, as produce requests and WriteTxnMarkers feed it."""

    def __init__(self, directory: str):
        self.log = Log.open(directory, _config())
        self.seq: dict[int, int] = {}

    def data(self, pid: int, records: int = 2) -> None:
        self.log.append(make_batch(records, producer_id=pid, producer_epoch=0,
                                   base_sequence=self.seq.get(pid, 0), transactional=True))
        self.seq[pid] = self.seq.get(pid, 0) + records

    def marker(self, pid: int, commit: bool) -> None:
        self.log.append(bytearray(encode_control_batch(commit, producer_id=pid,
                                                       producer_epoch=0)))

    def batches(self) -> list[bytes]:
        return split_batches(read_all(self.log))


def _replicate(follower: Log, batches: list[bytes]) -> None:
    follower.append(b"".join(batches), assign_offsets=False)


def _assert_clean(*logs: Log) -> None:
    for log in logs:
        problems = check_partition_txn_index(log.dir)
        assert not problems, "\n".join(problems)


def test_chunk_with_a_transactions_first_batch_and_its_abort(tmp_path):
    leader = Leader(str(tmp_path / "leader"))
    leader.data(10)                         # transaction 1, committed
    leader.marker(10, commit=True)
    upto = len(leader.batches())
    leader.data(10)                         # transaction 2 begins ...
    leader.marker(10, commit=False)         # ... and is aborted
    follower = Log.open(str(tmp_path / "follower"), _config())
    batches = leader.batches()
    _replicate(follower, batches[:upto])    # the previous marker came in an earlier fetch
    _replicate(follower, batches[upto:])
    assert follower.collect_aborted_transactions(0, follower.log_end_offset) == [(10, 3)]
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)


def test_chunk_with_the_previous_marker_too(tmp_path):
    leader = Leader(str(tmp_path / "leader"))
    leader.data(10)                         # transaction 1 at offsets 0-1 ...
    upto = len(leader.batches())
    leader.marker(10, commit=True)          # ... committed at 2
    leader.data(10)                         # transaction 2 at 3-4 ...
    leader.marker(10, commit=False)         # ... aborted at 5
    follower = Log.open(str(tmp_path / "follower"), _config())
    batches = leader.batches()
    _replicate(follower, batches[:upto])    # transaction 1 open at the follower's log end
    _replicate(follower, batches[upto:])    # its COMMIT, transaction 2 and its ABORT at once
    # the committed records 0-1 must not be reported as aborted
    assert follower.collect_aborted_transactions(0, follower.log_end_offset) == [(10, 3)]
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)


def test_interleaved_producers_in_one_chunk(tmp_path):
    leader = Leader(str(tmp_path / "leader"))
    leader.data(10)                         # 0-1   pid 10 opens
    leader.data(11)                         # 2-3   pid 11 opens
    leader.marker(10, commit=False)         # 4     pid 10 aborted; 11 still open at 2
    leader.data(10)                         # 5-6   pid 10 opens again
    leader.marker(11, commit=True)          # 7
    leader.data(12)                         # 8-9   pid 12 opens after pid 10
    leader.marker(10, commit=False)         # 10    pid 10 aborted; 12 open at 8
    leader.marker(12, commit=False)         # 11    pid 12 aborted; nothing else open
    follower = Log.open(str(tmp_path / "follower"), _config())
    _replicate(follower, leader.batches())
    got = [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
           for e in follower.txn_index.entries]
    assert got == [(10, 0, 4, 2), (10, 5, 10, 8), (12, 8, 11, 12)]
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)


def test_restart_with_a_transaction_open_at_the_log_end(tmp_path):
    leader = Leader(str(tmp_path / "leader"))
    for _ in range(3):                      # committed transactions of pid 0
        leader.data(0, 3)
        leader.marker(0, commit=True)
    leader.data(0, 3)                       # open at the follower's log end when it dies
    upto = len(leader.batches())
    leader.marker(0, commit=True)
    for i in range(6):                      # then a run of transactions, some aborted
        leader.data(0, 2)
        leader.marker(0, commit=i % 2 == 0)
    d = str(tmp_path / "follower")
    follower = Log.open(d, _config())
    batches = leader.batches()
    _replicate(follower, batches[:upto])
    follower.abandon()                      # kill -9
    follower = Log.open(d, _config())
    _replicate(follower, batches[upto:])    # catching up in one fetch
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)
    follower.abandon()                      # and again, after the aborts were indexed
    follower = Log.open(d, _config())
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(follower)


def test_truncation_then_refetch(tmp_path):
    leader = Leader(str(tmp_path / "leader"))
    leader.data(10)
    leader.data(11)
    leader.marker(10, commit=False)
    leader.data(10)
    leader.marker(11, commit=False)
    leader.marker(10, commit=False)
    follower = Log.open(str(tmp_path / "follower"), _config())
    _replicate(follower, leader.batches())
    follower.truncate_to(5)                 # a divergent tail goes (both txns open again)
    _assert_clean(follower)
    _replicate(follower, split_batches(read_all(leader.log, 5)))
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)


PIDS = (10, 11, 12)
ops = st.lists(st.tuples(st.sampled_from(("data", "data", "commit", "abort", "plain")),
                         st.sampled_from(PIDS)), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(ops, st.randoms(use_true_random=False))
def test_any_chunking_gives_the_leaders_index(tmp_path_factory, steps, rnd: random.Random):
    base = tmp_path_factory.mktemp("chunks")
    leader = Leader(str(base / "leader"))
    open_pids: set[int] = set()
    for op, pid in steps:
        if op == "data":
            leader.data(pid, 1)
            open_pids.add(pid)
        elif op == "plain":
            leader.log.append(make_batch(1))
        elif pid in open_pids:
            leader.marker(pid, commit=op == "commit")
            open_pids.discard(pid)
    batches = leader.batches()
    follower = Log.open(str(base / "follower"), _config())
    i = 0
    while i < len(batches):
        n = rnd.randint(1, len(batches) - i)
        _replicate(follower, batches[i:i + n])
        i += n
    assert follower.txn_index.entries == leader.log.txn_index.entries
    _assert_clean(leader.log, follower)


def test_recovery_mends_an_entry_written_wrong(tmp_path):
    d = str(tmp_path / "log")
    leader = Leader(d)
    leader.data(10)                         # 0-1
    leader.marker(10, commit=True)          # 2
    leader.data(10)                         # 3-4
    leader.marker(10, commit=False)         # 5
    # what an older broker's follower wrote: the committed transaction's first offset
    leader.log.txn_index.truncate_to(0)
    leader.log.txn_index.append(0, 10, 0, 5, 6)
    assert check_partition_txn_index(d)
    leader.log.abandon()                    # unclean stop: recovery replays the log
    log = Log.open(d, _config())
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [(10, 3)]
    _assert_clean(log)
