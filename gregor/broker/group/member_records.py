"""What KIP-848 consumer groups (consumer_records.py) and share groups
(share/group_records.py) have in common in `__consumer_offsets`: the codec of a family of
group-coordinator records, and the way a group's writes are ordered.

Keys: the int16 in front names the record type; group-only records carry the group id, the
others the group and member ids (not flexible). Values: int16 version 0, flexible; a newer
version only adds tagged fields, so it reads as 0. A null value is a tombstone.

Writes: a heartbeat is answered once the records it produced are committed, and one that
produced none once the group's earlier writes are. After a failed write the coordinator goes
on with the state it computed, so the group's next write is a snapshot of all of it (with
tombstones for the members whose removal was lost).
"""
from __future__ import annotations

import logging
import struct
from typing import Callable

from ...protocol.errors import ErrorCode as E
from ...protocol.primitives import DecodeError
from ...protocol.schema import Codec, F
from .store_errors import STORE_ERRORS

log = logging.getLogger("gregor.broker.group")

_I16 = struct.Struct(">h")
_GROUP_KEY = Codec([F("group_id", "string")], 0, False)
_MEMBER_KEY = Codec([F("group_id", "string"), F("member_id", "string")], 0, False)
VALUE_VERSION = 0


class RecordFamily:
    """Encode and decode one family's keys and values. values: {record type: value Codec}
    (a type without one is read and ignored); group_only: the types keyed by group alone;
    key_type(kind, group, member_id) builds a decoded key; member_kinds: the current
    assignment, target assignment and member metadata types, in Kafka's tombstone order."""

    def __init__(self, what: str, values: dict, group_only, key_type, member_kinds: tuple):
        self.what = what
        self.values = values
        self.group_only = frozenset(group_only)
        self.key_type = key_type
        self.member_kinds = member_kinds

    def encode_key(self, kind: int, group: str, member_id: str | None = None) -> bytes:
        if kind in self.group_only:
            return _I16.pack(kind) + _GROUP_KEY.encode({"group_id": group})
        return _I16.pack(kind) + _MEMBER_KEY.encode({"group_id": group, "member_id": member_id})

    def decode_key(self, kind: int, body):
        if kind in self.group_only:
            return self.key_type(kind, _GROUP_KEY.decode(body)["group_id"])
        k = _MEMBER_KEY.decode(body)
        return self.key_type(kind, k["group_id"], k["member_id"])

    def encode_value(self, kind: int, value: dict) -> bytes:
        return _I16.pack(VALUE_VERSION) + self.values[kind].encode(value)

    def decode_value(self, kind: int, data) -> dict | None:
        """The value's fields; None for a record type read and ignored."""
        if len(data) < 2:
            raise DecodeError(f"{self.what} record value shorter than its version")
        (version,) = _I16.unpack_from(data)
        if version < 0:
            raise DecodeError(f"invalid {self.what} value version {version}")
        codec = self.values.get(kind)
        return None if codec is None else codec.decode(memoryview(data)[2:])

    def member_tombstones(self, group_id: str, member_id: str) -> list:
        return [(self.encode_key(k, group_id, member_id), None) for k in self.member_kinds]

    def removed_members(self, records) -> set[str]:
        """Member ids whose member record these records delete."""
        member = self.member_kinds[-1]
        out = set()
        for key, value in records:
            if value is None and len(key) >= 2 and _I16.unpack_from(key)[0] == member:
                out.add(self.decode_key(member, memoryview(key)[2:]).member_id)
        return out


def write_then(group, records: list, ok: Callable[[], None], failed: Callable[[int], None], *,
               write: Callable, snapshot: Callable[[set], list], removed: Callable[[list], set],
               gone: bool) -> None:
    """Write a group's records (if any), then ok(); failed(code) if the write failed. group
    keeps inflight_writes, after_writes, write_failed and lost_writes (members whose removal a
    failed write lost, with a "" marker). write(records, done(code, offset)) appends them;
    snapshot(removed members) gives every record of the group's state; gone: the group is
    deleted, so a snapshot would bring it back."""
    if group.lost_writes and not gone:
        records = snapshot(group.lost_writes | removed(records))
        group.lost_writes = set()
    if not records:
        if group.inflight_writes:
            group.after_writes.append((ok, failed))
        else:
            ok()
        return
    group.inflight_writes += 1

    def done(code: int, _offset: int = -1) -> None:
        group.inflight_writes -= 1
        if code:
            log.warning("group %s: writing its records failed (error %d)", group.group_id, code)
            group.write_failed = STORE_ERRORS.get(code, E.UNKNOWN_SERVER_ERROR)
            group.lost_writes |= removed(records) | {""}
            failed(group.write_failed)
        else:
            ok()
        if not group.inflight_writes and group.after_writes:
            waiting, group.after_writes = group.after_writes, []
            bad, group.write_failed = group.write_failed, 0
            for ok_, failed_ in waiting:
                failed_(bad) if bad else ok_()
    write(records, done)
