"""check(history) -> Report: Jepsen's Kafka anomalies over a recorded history, no I/O.

Works on any history recorded with gregor.testing.history (or loaded from JSON lines), from
any Kafka cluster. Each anomaly is defined in its module (offsets, loss, transactions,
ordering, cycles); docs/jepsen.md lists them with Jepsen's definitions.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from gregor.testing.history import cycles, loss, offsets, ordering, transactions
from gregor.testing.history.analysis import analyze
from gregor.testing.history.availability import availability
from gregor.testing.history.history import History
from gregor.testing.history.op import INVOKE
from gregor.testing.history.report import DEFAULT_ALLOWED, Report

ANOMALIES = ("lost-write", "unseen", "duplicate", "inconsistent-offsets", "G1a",
             "precommitted-read", "poll-skip", "nonmonotonic-poll", "int-poll-skip",
             "int-nonmonotonic-poll", "nonmonotonic-send", "int-send-skip",
             "int-nonmonotonic-send", "G0", "G1c", "G0-realtime", "G1c-realtime")


def check(history, *, allow=DEFAULT_ALLOWED, faults=None, heal_time=None,
          unseen_is_error: bool = True) -> Report:
    """`allow`: anomaly names that do not make the history invalid (e.g. add "poll-skip"
    and "nonmonotonic-poll" for subscribe consumers whose rebalances were not recorded).
    `unseen_is_error=False` for histories without a final read."""
    if not isinstance(history, History):
        history = History(history)
    ops = history.ops
    a = analyze(history)
    found = {"lost-write": loss.lost_write(a), "unseen": loss.unseen(a),
             "duplicate": offsets.duplicate(a),
             "inconsistent-offsets": offsets.inconsistent_offsets(a),
             "G1a": transactions.aborted_read(a),
             "precommitted-read": transactions.precommitted_read(a)}
    found.update(ordering.polls(a))
    found.update(ordering.sends(a))
    found["G0"] = cycles.ww_cycles(a)
    found["G1c"] = cycles.wr_cycles(a)
    found["G0-realtime"] = cycles.realtime_ww(a)
    found["G1c-realtime"] = cycles.realtime_wr(a)
    allowed = frozenset(allow) | (frozenset() if unseen_is_error else {"unseen"})
    counts: dict = defaultdict(Counter)
    for _, done in a.pairs:
        counts[done.f][done.type] += 1
    events = [op for op in ops if op.type != INVOKE and op.index not in a.invoke_of]
    return Report(anomalies={n: found[n] for n in ANOMALIES}, allowed=allowed,
                  counts={f: dict(c) for f, c in counts.items()},
                  availability=availability(a, events, faults, heal_time))


check_history = check
