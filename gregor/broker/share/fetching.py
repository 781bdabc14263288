"""Acquiring records for one ShareFetch across the partitions of its share session, and the
response entries for them."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ..purgatory import DelayedOperation
from .acks import resolve

E = ErrorCode
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}
# What a ShareFetch with MaxRecords <= 0 gets (librdkafka's max.poll.records default).
DEFAULT_MAX_RECORDS = 500


def entry(pidx: int, code: int = 0, message=None) -> dict:
    return {"partition_index": pidx, "error_code": code, "error_message": message,
            "acknowledge_error_code": 0, "acknowledge_error_message": None,
            "current_leader": dict(NO_LEADER), "records": b"", "acquired_records": []}


def acquire(service, broker, ctx, session, group_id: str, member_id: str, max_records: int,
            max_bytes: int, strict: bool, cfg: dict | None = None) -> tuple[dict, int]:
    """({(topic id, partition): entry}, records acquired) over the session's partitions,
    starting at a partition that moves with the epoch so none starves. cfg: the group's
    settings when the caller has them already."""
    cfg = cfg or service.settings(group_id)
    read_committed = cfg["isolation_level"] == "read_committed"
    lock_ms = cfg["record_lock_duration_ms"]
    now = service.now_ms()
    if max_records <= 0:
        max_records = DEFAULT_MAX_RECORDS
    parts = sorted(session.partitions)
    if parts:
        k = session.epoch % len(parts)
        parts = parts[k:] + parts[:k]
    out: dict = {}
    taken = 0
    budget = max_bytes if max_bytes > 0 else 0x7FFFFFFF
    for tid, pidx in parts:
        p, _name, code = resolve(service, broker, ctx, tid, pidx)
        if code:
            e = entry(pidx, code)
            if code == E.NOT_LEADER_OR_FOLLOWER and p is None:
                e["current_leader"] = dict(NO_LEADER)
            out[(tid, pidx)] = e
            continue
        if taken >= max_records or budget <= 0:
            continue
        key = (group_id, tid, pidx)
        if service.needs_loading(key, p):
            continue                  # cluster: its state is not read yet; next fetch
        sp = service.share_partition(group_id, tid, pidx, p)
        batches = service.log_batches(p, read_committed, budget)
        ranges = sp.acquire(member_id, max_records - taken, batches, now, lock_ms,
                            strict=strict)
        if not ranges:
            continue
        data = service.records_bytes(p, ranges, batches.seen)
        budget -= len(data)
        taken += sum(r.last_offset - r.first_offset + 1 for r in ranges)
        e = entry(pidx)
        e["records"] = data
        e["acquired_records"] = [{"first_offset": r.first_offset, "last_offset": r.last_offset,
                                  "delivery_count": r.delivery_count} for r in ranges]
        out[(tid, pidx)] = e
        service.arm_lock_timer(key, sp)
    return out, taken


def as_topics(entries: dict) -> list[dict]:
    topics: dict = {}
    for (tid, _p), e in sorted(entries.items(), key=lambda kv: kv[0]):
        topics.setdefault(tid, []).append(e)
    return [{"topic_id": tid, "partitions": ps} for tid, ps in topics.items()]


class DelayedShareFetch(DelayedOperation):
    """A ShareFetch that found nothing to acquire waits here (up to MaxWaitMs) until an
    append, a release or an expired lock makes records available on one of its partitions."""

    def __init__(self, timeout_ms: int, attempt, done):
        super().__init__(timeout_ms)
        self.attempt = attempt            # () -> (entries, taken)
        self.done = done                  # (entries) -> None
        self.entries: dict = {}

    def try_complete(self) -> bool:
        entries, taken = self.attempt()
        self.entries.update(entries)
        if taken:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.done(self.entries)
