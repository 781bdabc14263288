"""One share-partition: what a share group has done with one topic-partition (KIP-932).

Kept without I/O: the caller hands in the batch headers of the log (`batches(offset)` yields
(base offset, last offset, skip) from `offset` on, below the high watermark; skip: a control
batch or one of an aborted transaction, archived without being delivered) and the time in
milliseconds; nothing here reads a clock, a socket or a file.

The window [start_offset, end_offset) holds the in-flight records; everything below
start_offset (the SPSO) is finished, nothing at or past end_offset has been handed out yet.
Each in-flight record has a state and a delivery count:

    AVAILABLE --acquire--> ACQUIRED --ACCEPT--> ACKNOWLEDGED
                              |  \\--REJECT / GAP--> ARCHIVED
                              \\--RELEASE / lock expiry / member gone--> AVAILABLE
                                   (ARCHIVED once the delivery count reached the limit)

The window is three parallel arrays indexed by offset - start_offset (a byte of state, a
byte of delivery count, the owner's small id, the lock's deadline) rather than an object per
record: 10,000 in-flight records cost ~100 KB, not ~2 MB, and advancing the start offset is
one slice. The window never holds more than `max_record_locks` records, so the arrays stay
small and the slices cheap.
"""
from __future__ import annotations

from array import array
from itertools import groupby
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
STATE_NAMES = {AVAILABLE: "AVAILABLE", ACQUIRED: "ACQUIRED", ACKNOWLEDGED: "ACKNOWLEDGED",
               ARCHIVED: "ARCHIVED"}

# AcknowledgeType codes (ShareFetch / ShareAcknowledge)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
NO_OWNER = 0
NO_DEADLINE = (1 << 63) - 1          # what a record not acquired has as its lock deadline
AVAILABLE_BYTE = bytes([AVAILABLE])
ACQUIRED_BYTE = bytes([ACQUIRED])
_FINISHED = bytes([ACKNOWLEDGED, ARCHIVED])
_ACQUIRED_AS_AVAILABLE = bytes(AVAILABLE if i == ACQUIRED else i for i in range(256))


class AckError(Exception):
    """An acknowledgement that cannot apply; `code` is Kafka's error for it."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121


@dataclass
class Acquired:
    first_offset: int
    last_offset: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int, delivery_count_limit: int = 5,
                 max_record_locks: int = 2000):
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self.state_epoch = 0
        self.leader_epoch = -1        # the partition's leader epoch it was loaded at (cluster)
        self._state = bytearray()
        self._count = bytearray()
        self._owner = array("i")
        self._deadline = array("q")
        self._owners: dict[str, int] = {}
        self._owner_names: dict[int, str] = {}
        self.archived_total = 0       # records archived over this share-partition's life

    # -- reading -----------------------------------------------------------------------------

    def in_flight(self) -> int:
        return len(self._state)

    def count(self, state: int) -> int:
        return self._state.count(state)

    def state_of(self, offset: int) -> tuple[int, int] | None:
        """(state, delivery count) of an in-flight offset; None outside the window."""
        i = offset - self.start_offset
        if 0 <= i < len(self._state):
            return self._state[i], self._count[i]
        return None

    def owner_of(self, offset: int) -> str | None:
        i = offset - self.start_offset
        if 0 <= i < len(self._state) and self._state[i] == ACQUIRED:
            return self._owner_names.get(self._owner[i])
        return None

    def runs(self) -> list[tuple[int, int, int, int]]:
        """The window as (first, last, state, delivery count) runs, ACQUIRED written as
        AVAILABLE: what is persisted (an acquisition is never written, as in Kafka)."""
        out: list[tuple[int, int, int, int]] = []
        first = self.start_offset
        states = self._state.translate(_ACQUIRED_AS_AVAILABLE)
        for (s, c), run in groupby(zip(states, self._count)):
            n = len(list(run))                 # counted in C: no Python step per record
            out.append((first, first + n - 1, s, c))
            first += n
        return out

    # -- restoring ---------------------------------------------------------------------------

    @classmethod
    def restore(cls, start_offset: int, end_offset: int, runs: Iterable, state_epoch: int,
                delivery_count_limit: int, max_record_locks: int) -> "SharePartition":
        sp = cls(start_offset, delivery_count_limit, max_record_locks)
        sp.state_epoch = state_epoch
        n = max(0, end_offset - start_offset)
        sp.end_offset = start_offset + n
        sp._state = bytearray(n)
        sp._count = bytearray(n)
        sp._owner = array("i", bytes(4 * n))
        sp._deadline = array("q", [NO_DEADLINE]) * n
        for first, last, state, count in runs:
            for off in range(max(first, start_offset), min(last, sp.end_offset - 1) + 1):
                i = off - start_offset
                sp._state[i] = AVAILABLE if state == ACQUIRED else state
                sp._count[i] = min(count, 255)
        sp._advance()
        return sp

    # -- acquiring ---------------------------------------------------------------------------

    def _owner_id(self, member_id: str) -> int:
        oid = self._owners.get(member_id)
        if oid is None:
            oid = self._owners[member_id] = len(self._owners) + 1
            self._owner_names[oid] = member_id
        return oid

    def acquire(self, member_id: str, max_records: int, batches: Callable[[int], Iterator],
                now_ms: int, lock_ms: int, strict: bool = False) -> list[Acquired]:
        """Hand records to member_id: first the AVAILABLE ones inside the window (records
        released or whose lock expired), then new batches from the log while the window has
        room. Whole log batches are taken unless `strict` (ShareFetch v2's record limit), so
        max_records may be exceeded by the rest of the last batch, as Kafka does."""
        if max_records <= 0:
            return []
        owner = self._owner_id(member_id)
        deadline = now_ms + lock_ms
        taken = 0
        picked: list[int] = []              # window indexes acquired again now
        fresh: list[tuple[int, int]] = []   # (first offset, count) of new records
        i = self._state.find(AVAILABLE_BYTE)
        while i >= 0 and taken < max_records:
            picked.append(i)
            taken += 1
            i = self._state.find(AVAILABLE_BYTE, i + 1)
        if taken < max_records and len(self._state) < self.max_record_locks:
            for base, last, skip in batches(self.end_offset):
                if last < self.end_offset:
                    continue
                first = max(base, self.end_offset)
                if first > self.end_offset:          # a hole (compaction, deleted records)
                    self._grow(first - self.end_offset, ARCHIVED)
                room = self.max_record_locks - len(self._state)
                n = last - first + 1
                if skip:
                    n = min(n, room)
                    self._grow(n, ARCHIVED)
                else:
                    if strict:
                        n = min(n, max_records - taken)
                    n = min(n, room)
                    if n > 0:
                        fresh.append((self.end_offset, n))
                        self._grow_acquired(n, owner, deadline)
                    taken += n
                if taken >= max_records or len(self._state) >= self.max_record_locks:
                    break
        for i in picked:
            self._state[i] = ACQUIRED
            self._count[i] = min(self._count[i] + 1, 255)
            self._owner[i] = owner
            self._deadline[i] = deadline
        ranges = self._as_ranges(picked)
        for first, n in fresh:                 # new records: first delivery, one range each
            if ranges and ranges[-1].last_offset == first - 1 and ranges[-1].delivery_count == 1:
                ranges[-1].last_offset = first + n - 1
            else:
                ranges.append(Acquired(first, first + n - 1, 1))
        self._advance()               # archived control records at the front are finished
        return ranges

    def _grow(self, n: int, state: int) -> None:
        if n <= 0:
            return
        self._state.extend(bytes([state]) * n)
        self._count.extend(bytes(n))
        self._owner.extend(array("i", bytes(4 * n)))
        self._deadline.extend(array("q", [NO_DEADLINE]) * n)
        self.end_offset += n
        if state == ARCHIVED:
            self.archived_total += n

    def _grow_acquired(self, n: int, owner: int, deadline: int) -> None:
        self._state.extend(bytes([ACQUIRED]) * n)
        self._count.extend(b"\x01" * n)
        self._owner.extend(array("i", [owner]) * n)
        self._deadline.extend(array("q", [deadline]) * n)
        self.end_offset += n

    def _as_ranges(self, picked: list[int]) -> list[Acquired]:
        out: list[Acquired] = []
        base = self.start_offset
        for i in sorted(picked):
            off, c = base + i, self._count[i]
            if out and out[-1].last_offset == off - 1 and out[-1].delivery_count == c:
                out[-1].last_offset = off
            else:
                out.append(Acquired(off, off, c))
        return out

    # -- acknowledging -----------------------------------------------------------------------

    def acknowledge(self, member_id: str, first: int, last: int, types: list[int],
                    now_ms: int = 0, lock_ms: int = 0, allow_renew: bool = False) -> None:
        """Apply one acknowledgement batch, all or nothing. Raises AckError (Kafka's code)
        when a record of it is not acquired by member_id, or the types are malformed."""
        if last < first:
            raise AckError(INVALID_REQUEST, f"LastOffset {last} is before FirstOffset {first}")
        n = last - first + 1
        if len(types) not in (1, n):
            raise AckError(INVALID_REQUEST,
                           f"{len(types)} acknowledge types for {n} offsets: give one type "
                           f"for the batch or one per offset")
        top = RENEW if allow_renew else REJECT
        for t in set(types):
            if not GAP <= t <= top:
                raise AckError(INVALID_REQUEST, f"acknowledge type {t} is not allowed here")
        owner = self._owners.get(member_id)
        lo, hi = first - self.start_offset, last - self.start_offset
        if owner is None or lo < 0 or hi >= len(self._state):
            raise AckError(INVALID_RECORD_STATE,
                           f"offsets {first}-{last} are not acquired by member {member_id}")
        if self._state.count(ACQUIRED_BYTE, lo, hi + 1) != n or \
                self._owner[lo:hi + 1].count(owner) != n:
            bad = next(i for i in range(lo, hi + 1)
                       if self._state[i] != ACQUIRED or self._owner[i] != owner)
            raise AckError(INVALID_RECORD_STATE,
                           f"offset {self.start_offset + bad} is not acquired by member "
                           f"{member_id} (its lock may have expired)")
        one = types[0] if len(types) == 1 else None
        if one in (ACCEPT, REJECT, GAP):       # the whole batch at once
            state = ACKNOWLEDGED if one == ACCEPT else ARCHIVED
            self._state[lo:hi + 1] = bytes([state]) * n
            self._owner[lo:hi + 1] = array("i", bytes(4 * n))
            self._deadline[lo:hi + 1] = array("q", [NO_DEADLINE]) * n
            if state == ARCHIVED:
                self.archived_total += n
            self._advance()
            return
        for k, i in enumerate(range(lo, hi + 1)):
            t = one if one is not None else types[k]
            if t == ACCEPT:
                self._set(i, ACKNOWLEDGED)
            elif t == RELEASE:
                self._release(i)
            elif t == RENEW:
                self._deadline[i] = now_ms + lock_ms
            else:                                   # GAP, REJECT
                self._set(i, ARCHIVED)
        self._advance()

    def _set(self, i: int, state: int) -> None:
        self._state[i] = state
        self._owner[i] = NO_OWNER
        self._deadline[i] = NO_DEADLINE
        if state == ARCHIVED:
            self.archived_total += 1

    def _release(self, i: int) -> None:
        if self._count[i] >= self.delivery_count_limit:
            self._set(i, ARCHIVED)
        else:
            self._set(i, AVAILABLE)

    # -- releasing ---------------------------------------------------------------------------

    def release_member(self, member_id: str) -> int:
        """Every record member_id holds comes back (it left, was fenced, closed its session
        or lost its connection). Returns how many."""
        owner = self._owners.get(member_id)
        if owner is None:
            return 0
        n = 0
        for i, s in enumerate(self._state):
            if s == ACQUIRED and self._owner[i] == owner:
                self._release(i)
                n += 1
        self._advance()
        return n

    def expire_locks(self, now_ms: int) -> int:
        """Records whose lock deadline has passed come back. Returns how many."""
        n = 0
        if min(self._deadline, default=NO_DEADLINE) > now_ms:
            return 0
        for i, s in enumerate(self._state):
            if s == ACQUIRED and self._deadline[i] <= now_ms:
                self._release(i)
                n += 1
        if n:
            self._advance()
        return n

    def next_deadline(self) -> int | None:
        best = min(self._deadline, default=NO_DEADLINE)      # only acquired ones have one
        return None if best == NO_DEADLINE else best

    # -- moving the start --------------------------------------------------------------------

    def _advance(self) -> None:
        """Move the start offset past the finished prefix of the window."""
        k = len(self._state) - len(self._state.lstrip(_FINISHED))     # in C, not per record
        if k:
            del self._state[:k]
            del self._count[:k]
            del self._owner[:k]
            del self._deadline[:k]
            self.start_offset += k

    def reset(self, offset: int) -> None:
        """AlterShareGroupOffsets / a start below the log: start again at `offset`, nothing in
        flight (only done while the group has no members)."""
        self.start_offset = self.end_offset = offset
        self._state = bytearray()
        self._count = bytearray()
        self._owner = array("i")
        self._deadline = array("q")
        self.state_epoch += 1

    def skip_to(self, log_start: int) -> None:
        """The log's start moved past our start (retention, DeleteRecords): those records are
        gone, so they are finished."""
        if log_start <= self.start_offset:
            return
        if log_start >= self.end_offset:
            self.reset(log_start)
            return
        k = log_start - self.start_offset
        for i in range(k):
            if self._state[i] != ACKNOWLEDGED:
                self._state[i] = ARCHIVED
        self._advance()
