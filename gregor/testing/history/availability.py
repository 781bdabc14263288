"""Availability figures, not verdicts: how much was served, and for how long nothing was.

Fault windows come from the caller (`faults=[(start_ns, end_ns), ...]`) or from the history's
own events: `history.event("fault-start", ...)` / `history.event("fault-stop", ...)` open and
close a window (windows may overlap: faulty while any is open), `history.event("heal")` closes
them all and marks the heal time.
- acknowledged fraction: of sends and transactions, the part that completed ok (a transaction
  the workload chose to abort counts as served), overall and for those invoked while healthy;
- longest outage: the longest stretch with no ok send, poll or transaction;
- recovery: from the heal to the first ok send or transaction after it.
Final reads (ops with meta "final") are left out: they run after the heal on purpose.
"""
from __future__ import annotations

from gregor.testing.history.analysis import Analysis
from gregor.testing.history.op import FAIL, OK, POLL, SEND, TXN

NS = 1e9


def windows_from_events(ops) -> tuple[list[tuple[int, int]], int | None]:
    windows, open_count, start, heal = [], 0, None, None
    for op in ops:
        if op.f == "fault-start":
            if open_count == 0:
                start = op.time
            open_count += 1
        elif op.f == "fault-stop" and open_count:
            open_count -= 1
            if open_count == 0:
                windows.append((start, op.time))
        elif op.f == "heal":
            if open_count:
                windows.append((start, op.time))
            open_count, heal = 0, op.time
    if open_count:
        windows.append((start, None))
    return windows, heal


def _served(op) -> bool:
    return op.type == OK or (op.type == FAIL and bool(op.meta.get("aborted")))


def availability(a: Analysis, events, faults=None, heal_time=None) -> dict:
    ev_windows, ev_heal = windows_from_events(events)
    windows = list(faults) if faults is not None else ev_windows
    heal = heal_time if heal_time is not None else ev_heal
    live = [(inv, done) for inv, done in a.pairs
            if done.f in (SEND, POLL, TXN) and not done.meta.get("final")]
    if not live:
        return {}
    t0 = min(inv.time for inv, _ in live)

    def faulty(t):
        return any(s <= t and (e is None or t < e) for s, e in windows)

    writes = [(inv, done) for inv, done in live if done.f in (SEND, TXN)]
    healthy = [(inv, done) for inv, done in writes if not faulty(inv.time)]

    def fraction(pairs):
        return round(sum(_served(d) for _, d in pairs) / len(pairs), 4) if pairs else None

    oks = sorted(done.time for _, done in live if _served(done))
    end = max(done.time for _, done in live)
    gaps = [(b - a_, a_, b) for a_, b in zip([t0] + oks, oks + [end])]
    gap, g_start, g_end = max(gaps) if gaps else (0, t0, t0)
    out = {"writes": len(writes), "acknowledged_fraction": fraction(writes),
           "healthy_writes": len(healthy), "healthy_acknowledged_fraction": fraction(healthy),
           "longest_outage_s": round(gap / NS, 3),
           "longest_outage_at_s": [round((g_start - t0) / NS, 3), round((g_end - t0) / NS, 3)],
           "fault_windows": len(windows)}
    if heal is not None:
        after = [done.time for _, done in writes if _served(done) and done.time >= heal]
        out["heal_at_s"] = round((heal - t0) / NS, 3)
        out["recovery_s"] = round((min(after) - heal) / NS, 3) if after else None
    return out
