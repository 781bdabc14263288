"""A bounded cache of client sessions with epochs, as Kafka keeps fetch sessions (KIP-227).

Sans-I/O: no sockets, no threads, no wall clock. Time comes from an injected `clock` (a callable
returning milliseconds, monotonic), ids from an injected `random.Random`, so tests are exact.
Fetch sessions (apis/fetch.py) use it; any other per-client session with epochs (share sessions)
can too, keyed by an id the cache draws or by a key of the owner's choosing.

API
---
Epochs (Kafka's FetchMetadata rules):
    INITIAL_EPOCH = 0     a request at epoch 0 asks for a new session (and a full response)
    FINAL_EPOCH = -1      a request at epoch -1 closes the session it names (or has none)
    INVALID_SESSION_ID = 0
    next_epoch(e)         e + 1; after INT32_MAX comes 1; after a negative epoch, FINAL_EPOCH

SessionCache(max_slots=1000, eviction_ms=120_000, clock=None, rng=None)
    create(size, payload=None, privileged=False, key=None) -> Session | None
        A new session at epoch next_epoch(INITIAL_EPOCH) == 1 holding `payload` (whatever the
        owner keeps per session, e.g. its partitions), `size` counting its partitions. `key` is
        the session's key; None draws a fresh random positive int32 id. Returns None when the
        cache is full and no session may be evicted for it (the caller then serves the request
        without a session, as Kafka does). Creating under an existing key replaces that session.
    get(key) -> Session | None              no side effect (does not count as a use)
    touch(session, size=None)               marks a use now (LRU order); size: its new size
    remove(key) -> Session | None
    len(cache), key in cache, cache.evictions (sessions evicted to make room), cache.partitions
    (sum of sizes)

Session: key, epoch, payload, size, privileged, created_ms, last_used_ms. The owner advances
`epoch` (session.epoch = next_epoch(session.epoch)) when it accepts a request.

Eviction follows Kafka's FetchSessionCache when the cache holds max_slots sessions and a new
one is asked for:
  1. the least recently used session, if unused for longer than eviction_ms, is evicted;
  2. otherwise the least valuable evictable session is, if it is worth less than the new one.
     Value orders by (privileged, size, then key): a follower's (privileged) session beats a
     consumer's, a larger session beats a smaller one. Evictable by a privileged newcomer: every
     unprivileged session and privileged ones older than eviction_ms; by an unprivileged
     newcomer: only sessions (of either kind) older than eviction_ms.
Kafka keeps sorted trees for step 2; here it is a scan of the sessions, run only when the cache
is full (O(max_slots) then, O(1) for every other call).
"""
from __future__ import annotations

import random
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INVALID_SESSION_ID = 0
INT32_MAX = (1 << 31) - 1


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: FINAL stays FINAL, INT32_MAX wraps to 1 (never 0,
    which would mean 'new session')."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == INT32_MAX:
        return 1
    return epoch + 1


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class Session:
    __slots__ = ("key", "epoch", "payload", "size", "privileged", "created_ms", "last_used_ms")

    def __init__(self, key, payload, size: int, privileged: bool, now_ms: int):
        self.key = key
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.payload = payload
        self.size = size
        self.privileged = privileged
        self.created_ms = now_ms
        self.last_used_ms = now_ms

    def __repr__(self):
        return (f"Session(key={self.key!r}, epoch={self.epoch}, size={self.size}, "
                f"privileged={self.privileged})")


def _sort_key(key) -> tuple:
    # Keys of mixed types still compare (ints first): the tie-break only needs to be total.
    return (0, key, "") if isinstance(key, int) else (1, 0, repr(key))


class SessionCache:
    def __init__(self, max_slots: int = 1000, eviction_ms: int = 120_000,
                 clock: Callable[[], int] | None = None, rng: random.Random | None = None):
        if max_slots < 0:
            raise ValueError(f"max_slots must be >= 0, not {max_slots}")
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self._clock = clock or _monotonic_ms
        self._rng = rng or random.Random()
        self._sessions: OrderedDict[Hashable, Session] = OrderedDict()   # LRU first
        self.evictions = 0
        self.partitions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, key) -> bool:
        return key in self._sessions

    def get(self, key) -> Session | None:
        return self._sessions.get(key)

    def create(self, size: int, payload: Any = None, privileged: bool = False,
               key: Hashable | None = None) -> Session | None:
        now = self._clock()
        if key is not None and key in self._sessions:
            self.remove(key)
        if len(self._sessions) >= self.max_slots and not self._try_evict(privileged, size,
                                                                         now):
            return None
        if key is None:
            key = self._new_id()
        s = Session(key, payload, size, privileged, now)
        self._sessions[key] = s
        self.partitions += size
        return s

    def touch(self, session: Session, size: int | None = None) -> None:
        session.last_used_ms = self._clock()
        if size is not None:
            self.partitions += size - session.size
            session.size = size
        if self._sessions.get(session.key) is session:
            self._sessions.move_to_end(session.key)

    def remove(self, key) -> Session | None:
        s = self._sessions.pop(key, None)
        if s is not None:
            self.partitions -= s.size
        return s

    def _new_id(self) -> int:
        while True:
            sid = self._rng.randint(1, INT32_MAX)
            if sid not in self._sessions:
                return sid

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        if not self._sessions:
            return False
        lru_key = next(iter(self._sessions))
        if now - self._sessions[lru_key].last_used_ms > self.eviction_ms:
            self.remove(lru_key)
            self.evictions += 1
            return True
        victim = None
        victim_value = None
        for s in self._sessions.values():
            old = now - s.created_ms > self.eviction_ms
            if not (old or (privileged and not s.privileged)):
                continue
            value = (s.privileged, s.size, _sort_key(s.key))
            if victim_value is None or value < victim_value:
                victim, victim_value = s, value
        # The newcomer's key sorts lowest among equals (Kafka gives it id 0 in the comparison).
        if victim is None or (privileged, size, (0, 0, "")) < victim_value:
            return False
        self.remove(victim.key)
        self.evictions += 1
        return True
