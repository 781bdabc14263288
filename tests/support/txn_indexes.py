"""After a transaction test: every replica's aborted-transaction index is what its log
implies (gregor.testing.txn_index_check), and the check had ABORT markers to compare."""
from __future__ import annotations

from gregor.testing.txn_index_check import check_txn_indexes, count_aborted_transactions


def assert_txn_indexes_match_logs(data_dirs, *, aborts_at_least: int = 0) -> None:
    dirs = [str(d) for d in data_dirs]
    problems = check_txn_indexes(dirs)
    assert not problems, "\n".join(problems)
    found = count_aborted_transactions(dirs)
    assert found >= aborts_at_least, \
        f"only {found} aborted transaction(s) in the logs of {dirs}, {aborts_at_least} expected"
