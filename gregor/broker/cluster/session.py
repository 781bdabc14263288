"""A broker's ZooKeeper session as one state machine, fed in order on the event loop (sans-I/O).

kazoo reports SUSPENDED (connection lost, the session may live on), LOST (ZooKeeper expired the
session: its ephemeral nodes, our registration among them, are gone) and CONNECTED (connected,
under the same session or a new one) on its own thread. metadata_store.py hands each report to
the event loop, in kazoo's order, with the id of the session it was about; every decision is
taken here, on the loop, one event at a time, so what the broker does never depends on which
thread saw what first.

`on_event` turns a report into the `Transition`s the broker must act on, in order, or none (a
duplicate or a stale report, which must change nothing: a LOST of a session already replaced
must not take a re-registered broker out of service again). `on_deadline` does the same for
the timer a suspension arms: a session cut off for a whole session timeout has been expired
by ZooKeeper (which may not be able to tell us yet); the timer is tied to the suspension that
armed it, so a timer left over from an earlier suspension, once the session is back or
replaced, is stale.
"""
from __future__ import annotations

from dataclasses import dataclass

CONNECTED, SUSPENDED, EXPIRED = "CONNECTED", "SUSPENDED", "EXPIRED"

# What a transition asks of the broker.
SUSPEND = "suspend"            # stop acting as controller; arm the deadline
CUT_OFF = "cut_off"            # suspended for a whole session timeout: step out of service
EXPIRE = "expire"              # the session is gone: step out, register again when connected
RECONNECT = "reconnect"        # back under the same session: read the cluster again
NEW_SESSION = "new_session"    # connected under a new session: register again, read again


@dataclass(frozen=True)
class Transition:
    action: str
    session_id: int | None
    suspension: int = 0        # which suspension a SUSPEND's deadline belongs to


class SessionStateMachine:
    def __init__(self, session_id: int | None = None):
        self.state = CONNECTED
        self.session_id = session_id
        self.suspension = 0        # bumped by every change, so older deadlines are stale
        self.stale_events = 0      # ignored reports, for tests and logs

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED

    def on_event(self, event: str, session_id: int | None) -> list[Transition]:
        """One kazoo report ("CONNECTED", "SUSPENDED" or "LOST") about `session_id`."""
        if event == "SUSPENDED":
            if self.state != CONNECTED or not self._ours(session_id):
                return self._stale()
            self.state = SUSPENDED
            self.suspension += 1
            return [Transition(SUSPEND, self.session_id, self.suspension)]
        if event == "LOST":
            if self.state == EXPIRED or not self._ours(session_id):
                return self._stale()       # already expired, or about a replaced session
            return [self._expire()]
        if event == "CONNECTED":
            if session_id is not None and session_id != self.session_id:
                # A new session: whatever the old one held in ZooKeeper is gone, whether or
                # not its LOST was reported.
                out = [] if self.state == EXPIRED or self.session_id is None \
                    else [self._expire()]
                self.session_id = session_id
                self.state = CONNECTED
                self.suspension += 1
                return out + [Transition(NEW_SESSION, session_id)]
            if self.state == SUSPENDED:
                self.state = CONNECTED
                self.suspension += 1
                return [Transition(RECONNECT, self.session_id)]
            return self._stale()           # connected already, or expired and no new id
        return self._stale()

    def on_deadline(self, suspension: int) -> list[Transition]:
        """The deadline armed by suspension `suspension` ran out."""
        if self.state != SUSPENDED or suspension != self.suspension:
            return self._stale()
        return [Transition(CUT_OFF, self.session_id, suspension)]

    def _expire(self) -> Transition:
        self.state = EXPIRED
        self.suspension += 1
        return Transition(EXPIRE, self.session_id)

    def _ours(self, session_id: int | None) -> bool:
        return session_id is None or self.session_id is None or session_id == self.session_id

    def _stale(self) -> list[Transition]:
        self.stale_events += 1
        return []
