"""The broker's ZooKeeper session state machine (session.py), sans-I/O: kazoo's reports in the
orders kazoo makes them, and the stale ones that must change nothing."""
from __future__ import annotations

from gregor.broker.cluster.session import (CONNECTED, CUT_OFF, EXPIRE, EXPIRED, NEW_SESSION,
                                           RECONNECT, SUSPEND, SUSPENDED, SessionStateMachine)

OLD, NEW, NEWER = 0x100, 0x200, 0x300


def actions(transitions):
    return [t.action for t in transitions]


def test_expiry_then_a_new_session_the_order_kazoo_reports_it():
    s = SessionStateMachine(OLD)
    suspended = s.on_event("SUSPENDED", OLD)
    assert actions(suspended) == [SUSPEND] and s.state == SUSPENDED
    assert actions(s.on_event("LOST", OLD)) == [EXPIRE] and s.state == EXPIRED
    assert actions(s.on_event("CONNECTED", NEW)) == [NEW_SESSION]
    assert (s.state, s.session_id) == (CONNECTED, NEW)
    # The deadline the suspension armed fires after the broker is back: it is stale and
    # must not take the broker out of service again (the bug of issue 21).
    assert s.on_deadline(suspended[0].suspension) == []
    assert s.connected and s.stale_events == 1


def test_a_suspension_that_lasts_a_session_timeout_cuts_the_broker_off():
    s = SessionStateMachine(OLD)
    [t] = s.on_event("SUSPENDED", OLD)
    assert actions(s.on_deadline(t.suspension)) == [CUT_OFF]
    assert s.state == SUSPENDED                  # still waiting for kazoo's verdict
    assert actions(s.on_event("CONNECTED", OLD)) == [RECONNECT]   # the session survived
    assert s.connected


def test_a_reconnection_within_the_session_disarms_the_deadline():
    s = SessionStateMachine(OLD)
    [first] = s.on_event("SUSPENDED", OLD)
    assert actions(s.on_event("CONNECTED", OLD)) == [RECONNECT]
    [second] = s.on_event("SUSPENDED", OLD)
    assert s.on_deadline(first.suspension) == []          # the first suspension's: stale
    assert actions(s.on_deadline(second.suspension)) == [CUT_OFF]


def test_stale_and_duplicate_reports_change_nothing():
    s = SessionStateMachine(OLD)
    s.on_event("SUSPENDED", OLD)
    s.on_event("LOST", OLD)
    s.on_event("CONNECTED", NEW)
    assert s.on_event("LOST", OLD) == []                  # about the replaced session
    assert s.on_event("SUSPENDED", OLD) == []
    assert s.on_event("CONNECTED", NEW) == []             # already connected
    assert s.on_event("LOST", OLD) == []
    assert (s.state, s.session_id, s.stale_events) == (CONNECTED, NEW, 4)
    assert actions(s.on_event("LOST", NEW)) == [EXPIRE]   # the current session's counts
    assert s.on_event("LOST", NEW) == []                  # once


def test_a_new_session_without_a_reported_loss_still_counts_as_an_expiry():
    s = SessionStateMachine(OLD)
    s.on_event("SUSPENDED", OLD)
    out = s.on_event("CONNECTED", NEW)
    assert actions(out) == [EXPIRE, NEW_SESSION]
    assert [t.session_id for t in out] == [OLD, NEW]
    assert actions(s.on_event("CONNECTED", NEWER)) == [EXPIRE, NEW_SESSION]


def test_two_bounces_in_a_row():
    s = SessionStateMachine(OLD)
    for old, new in ((OLD, NEW), (NEW, NEWER)):
        [t] = s.on_event("SUSPENDED", old)
        assert actions(s.on_event("LOST", old) + s.on_event("CONNECTED", new)) == \
            [EXPIRE, NEW_SESSION]
        assert s.on_deadline(t.suspension) == []
    assert (s.state, s.session_id) == (CONNECTED, NEWER)
