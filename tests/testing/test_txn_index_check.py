"""gregor.testing.txn_index_check finds each kind of wrong `.txnindex` and passes a right one."""
from __future__ import annotations

import os
import time

from gregor.log import Log, LogConfig
from gregor.protocol.records.batch import encode_control_batch
from gregor.testing.txn_index_check import check_partition_txn_index, check_txn_indexes
from tests.log.batches import make_batch


def _log(directory) -> Log:
    log = Log.open(str(directory), LogConfig.from_dict({"segment.bytes": 100_000}))
    now = int(time.time() * 1000)           # recent: no time-based roll between batches
    log.append(make_batch(2, producer_id=7, producer_epoch=0, base_sequence=0,
                          transactional=True, timestamp=now))          # 0-1
    log.append(make_batch(1, producer_id=8, producer_epoch=0, base_sequence=0,
                          transactional=True, timestamp=now))          # 2
    log.append(bytearray(encode_control_batch(False, producer_id=7, producer_epoch=0,
                                              timestamp_ms=now)))     # 3
    log.append(bytearray(encode_control_batch(True, producer_id=8, producer_epoch=0,
                                              timestamp_ms=now)))     # 4
    return log


def test_a_right_index_passes_and_each_wrong_one_is_named(tmp_path):
    data_dir = tmp_path / "broker-0"
    log = _log(data_dir / "t-0")
    log.close()
    assert check_txn_indexes([str(data_dir)]) == []
    index = data_dir / "t-0" / f"{0:020d}.txnindex"
    right = index.read_bytes()

    index.unlink()                                            # entry missing
    [missing] = check_txn_indexes(str(data_dir))
    assert "missing" in missing and "pid 7, first 0, last 3, lso 2" in missing

    log2 = Log.open(str(data_dir / "t-0"))
    log2.txn_index.truncate_to(0)
    log2.txn_index.append(0, 7, 2, 3, 2)                      # first offset wrong
    log2.txn_index.append(0, 8, 2, 4, 5)                      # a committed transaction
    log2.close()
    problems = check_partition_txn_index(str(data_dir / "t-0"))
    assert any("should be (pid 7, first 0, last 3, lso 2)" in p for p in problems)
    assert any("pid 8" in p and "matches no ABORT marker" in p for p in problems)
    assert len(problems) == 2, problems

    index.write_bytes(right + b"\0" * 5)                      # torn tail
    assert any("torn" in p for p in check_txn_indexes(str(data_dir)))


def test_unknown_history_is_not_judged(tmp_path):
    d = tmp_path / "t-0"
    log = _log(d)
    log.close()
    with open(os.path.join(d, "log-start-offset"), "w") as f:
        f.write("1\n")                  # the start moved: transactions may begin below it
    index = d / f"{0:020d}.txnindex"
    log2 = Log.open(str(d))
    log2.txn_index.truncate_to(0)
    log2.txn_index.append(0, 7, 0, 3, 99)                     # lso not judged
    log2.close()
    assert check_partition_txn_index(str(d)) == []
    assert index.exists()


def test_unknown_history_still_needs_the_marker(tmp_path):
    d = tmp_path / "t-0"
    _log(d).close()
    with open(os.path.join(d, "log-start-offset"), "w") as f:
        f.write("1\n")
    log2 = Log.open(str(d))
    log2.txn_index.append(0, 8, 2, 4, 5)                      # offset 4 is a COMMIT
    log2.close()
    [problem] = check_partition_txn_index(str(d))
    assert "no ABORT marker of pid 8 at offset 4" in problem
