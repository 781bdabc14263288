"""Share sessions (KIP-932): what a member fetches from this broker, and the epoch its next
request must carry. Like KIP-227 fetch sessions, one per (group, member) on each broker.

    epoch 0     opens (or replaces) the session with the request's partitions; it may not
                carry acknowledgements (INVALID_REQUEST), and it fails with
                SHARE_SESSION_LIMIT_REACHED when the broker already holds its limit
    epoch n>0   must be the session's next epoch (INVALID_SHARE_SESSION_EPOCH); its partitions
                are added, its forgotten partitions removed
    epoch -1    closes the session (its acknowledgements still apply)
    no session  SHARE_SESSION_NOT_FOUND

Epochs count 1, 2, ... and wrap from 2^31-1 back to 1, as clients count them (the broker's
session cache, gregor/broker/sessions.py, keeps them). Sessions are
also dropped with their connection, so a killed consumer's records come back at once.
Sans-I/O: the caller maps errors to responses and releases records.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionCache, next_epoch

SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133
INVALID_REQUEST = 42
# Share sessions are never evicted for newcomers (Kafka 4.1+ answers
# SHARE_SESSION_LIMIT_REACHED instead); they go with their connection or their member.
NEVER_EVICT_MS = 1 << 62

__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSessions", "SessionError", "next_epoch"]


class SessionError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(eq=False)
class ShareSession:
    group_id: str
    member_id: str
    connection: object
    cached: object = None                 # the cache's Session (its epoch is the next one)
    partitions: set = field(default_factory=set)      # {(topic id bytes, partition)}

    @property
    def epoch(self) -> int:
        """The epoch the next request must carry."""
        return self.cached.epoch


class ShareSessions:
    """Share sessions on the broker's session cache (gregor/broker/sessions.py), keyed by
    (group, member), with an index by connection."""

    def __init__(self, max_sessions: int = 2000):
        self.max_sessions = max_sessions
        self._cache = SessionCache(max_slots=max_sessions, eviction_ms=NEVER_EVICT_MS)
        self._by_connection: dict[object, set] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        c = self._cache.get((group_id, member_id))
        return c.payload if c is not None else None

    def open(self, group_id: str, member_id: str, connection, partitions) -> ShareSession:
        self.close(group_id, member_id)
        s = ShareSession(group_id, member_id, connection, partitions=set(partitions))
        cached = self._cache.create(len(s.partitions), s, key=(group_id, member_id))
        if cached is None:
            raise SessionError(SHARE_SESSION_LIMIT_REACHED,
                               f"this broker already holds {self.max_sessions} share sessions "
                               f"(group.share.max.share.sessions)")
        s.cached = cached
        self._by_connection.setdefault(connection, set()).add((group_id, member_id))
        return s

    def check(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request at epoch > 0 or -1 continues; raises SessionError."""
        s = self.get(group_id, member_id)
        if s is None:
            raise SessionError(SHARE_SESSION_NOT_FOUND,
                               f"no share session for member {member_id} of group {group_id} "
                               f"on this broker; open one with ShareSessionEpoch 0")
        if epoch != FINAL_EPOCH and epoch != s.epoch:
            raise SessionError(INVALID_SHARE_SESSION_EPOCH,
                               f"share session epoch {epoch} is not the expected {s.epoch}")
        return s

    def advance(self, s: ShareSession) -> None:
        s.cached.epoch = next_epoch(s.cached.epoch)
        self._cache.touch(s.cached, len(s.partitions))

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        c = self._cache.remove((group_id, member_id))
        if c is None:
            return None
        self._unlink(c.payload)
        return c.payload

    def _unlink(self, s: ShareSession) -> None:
        keys = self._by_connection.get(s.connection)
        if keys is not None:
            keys.discard((s.group_id, s.member_id))
            if not keys:
                del self._by_connection[s.connection]

    def drop_connection(self, connection) -> list[ShareSession]:
        """The sessions opened on a connection that just closed (removed)."""
        out = []
        for key in self._by_connection.pop(connection, set()):
            c = self._cache.remove(key)
            if c is not None:
                out.append(c.payload)
        return out
