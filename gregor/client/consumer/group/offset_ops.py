"""The application's coordinator calls inside the membership state machine: commits
(OffsetCommit with the member's generation, which fences a member that fell out of the group)
and committed-offset lookups (OffsetFetch, require_stable). Functions of a `Membership`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....protocol.errors import ErrorCode as E, error_for_code
from . import requests as _m

if TYPE_CHECKING:
    from .membership import Membership
    from .requests import Op, Request


def op_request(self: Membership, op: Op) -> Request | None:
    """The OffsetFetch / OffsetCommit of an op, or None when it failed at once."""
    if op.kind == "fetch":
        by: dict[str, list[int]] = {}
        for t, p in op.payload:
            by.setdefault(t, []).append(p)
        body = {"group_id": self.s.group_id, "require_stable": True,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in by.items()]}
        return _m.Request("OffsetFetch", body, _m.COORDINATOR, self.s.request_timeout_ms,
                       "op", op)
    # commit: payload {(topic, partition): offset}
    if self.subscribed and self.generation < 0:
        op.done(None, _m.CommitFailedError(
            f"cannot commit for group {self.s.group_id!r}: this member is not in the "
            "group right now (rebalancing or kicked out); poll() to rejoin"))
        return None
    topics: dict[str, list] = {}
    for (t, p), off in op.payload.items():
        topics.setdefault(t, []).append({
            "partition_index": p, "committed_offset": off, "committed_leader_epoch": -1,
            "commit_timestamp": -1, "committed_metadata": ""})
    gen, member = (self.generation, self.member_id) if self.subscribed else (-1, "")
    body = {"group_id": self.s.group_id, "generation_id_or_member_epoch": gen,
            "member_id": member, "group_instance_id": self.s.instance_id
            if self.subscribed else None, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    return _m.Request("OffsetCommit", body, _m.COORDINATOR, self.s.request_timeout_ms, "op", op)


def on_op_response(self: Membership, op: Op, body: dict, now: float) -> None:
    if op.kind == "fetch":
        _on_fetch(self, op, body, now)
        return
    codes = {(t["name"], p["partition_index"]): p["error_code"]
             for t in body["topics"] for p in t["partitions"]}
    bad = next((c for c in codes.values() if c), 0)
    if not bad:
        op.done(dict(op.payload), None)
    elif bad in _m._FIND_AGAIN or bad in _m._RETRY:
        if bad in _m._FIND_AGAIN:
            self._coordinator_dead()
        op.not_before_ms = now + self.s.retry_backoff_ms
        self.ops.append(op)
    elif bad in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS):
        if bad == E.REBALANCE_IN_PROGRESS:
            self._request_rejoin()
        elif self.state == _m.STABLE or self.generation >= 0:
            self._reset(member=bad == E.UNKNOWN_MEMBER_ID)
        op.done(None, _m.CommitFailedError(
            f"commit for group {self.s.group_id!r} refused "
            f"({error_for_code(bad).name}): {_m.CommitFailedError.message}"))
    else:
        if bad == E.FENCED_INSTANCE_ID:
            self._fail(error_for_code(bad))
        tp = next(tp for tp, c in codes.items() if c == bad)
        op.done(None, error_for_code(bad, f"committing {tp[0]}-{tp[1]} for group "
                                     f"{self.s.group_id!r}: {error_for_code(bad).message}"))


def _on_fetch(self: Membership, op: Op, body: dict, now: float) -> None:
    top = body.get("error_code", 0)
    codes = [p["error_code"] for t in body["topics"] for p in t["partitions"]]
    bad = top or next((c for c in codes if c), 0)
    if bad in _m._FIND_AGAIN or bad in _m._RETRY:
        if bad in _m._FIND_AGAIN:
            self._coordinator_dead()
        op.not_before_ms = now + self.s.retry_backoff_ms
        self.ops.append(op)
        return
    if bad:
        op.done(None, error_for_code(bad, f"reading the committed offsets of group "
                                     f"{self.s.group_id!r}: {error_for_code(bad).message}"))
        return
    out = {tp: None for tp in op.payload}
    for t in body["topics"]:
        for p in t["partitions"]:
            off = p["committed_offset"]
            out[(t["name"], p["partition_index"])] = off if off >= 0 else None
    op.done(out, None)

