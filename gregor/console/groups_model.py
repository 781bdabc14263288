"""Consumer groups as the console shows them: the list (from the lag sampler's latest sample),
one group live (state, members and assignments, per partition committed and end offsets,
offset lag and time lag), offset resets with a dry run, and deletion.

Time lag is Kafka's "how far behind in time": now minus the timestamp of the record at the
committed offset (the next one the group will read); 0 when the group is caught up.

Resets follow Kafka's kafka-consumer-groups.sh: only a group without active members (state
Empty or Dead) can be reset; targets are clamped to [log start, log end].
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

from .lag import partitions_read
from .reader import records_at

STRATEGIES = ("earliest", "latest", "offset", "timestamp", "shift")
_INACTIVE = {"Empty", "Dead"}


class ResetRefused(ValueError):
    """A reset Kafka's tool would refuse (active members, bad target); says why."""


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch from digits (ms) or an ISO-8601 time (UTC if no zone)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ResetRefused(f"{text!r} is neither milliseconds since the epoch nor an ISO-8601 "
                           "time such as 2026-11-24T10:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


class GroupsModel:
    def __init__(self, pool, sampler):
        self.pool = pool
        self.sampler = sampler
        self.settings = pool.settings

    async def groups(self) -> dict:
        snap = await self.sampler.snapshot()
        rows = []
        for gid in sorted(snap):
            g = snap[gid]
            rows.append({"group_id": gid, "state": g.state, "protocol_type": g.protocol_type,
                         "type": g.group_type or "classic",
                         "topics": g.topics, "partitions": len(g.ends),
                         "uncommitted": len(g.uncommitted),
                         "total_lag": g.total_lag, "max_lag": g.max_lag,
                         "history": [v for _, v in self.sampler.series(gid)][-60:]})
        return {"groups": rows, "sampled_at": self.sampler.sampled_at,
                "interval_s": self.sampler.interval_s}

    async def groups_of_topic(self, topic: str) -> list[dict]:
        snap = await self.sampler.snapshot()
        out = []
        for gid in sorted(snap):
            g = snap[gid]
            lags = {tp: v for tp, v in g.lag_by_partition.items() if tp[0] == topic}
            if any(tp[0] == topic for tp in g.committed):
                out.append({"group_id": gid, "state": g.state, "lag": sum(lags.values())})
        return out

    async def share_group(self, gid: str) -> dict:
        """A KIP-932 share group: state, members and their assignments, and per partition
        the share-partition's start offset (records before it are done), the log end and the
        lag between them (records not yet acknowledged, or not started: -1)."""
        from ..client.admin_share_groups import describe_share_group, share_group_offsets

        def read(admin):
            d = describe_share_group(admin, gid)
            starts = share_group_offsets(admin, gid)
            owners: dict = {}
            for m in d.members:
                for tp in m.assignment:
                    owners.setdefault(tp, []).append(m)
            tps = partitions_read(admin, set(starts) | set(owners))
            ends = admin.list_offsets({tp: "latest" for tp in tps}) if tps else {}
            return d, starts, owners, tps, ends
        d, starts, owners, tps, ends = await self.pool.admin(read)
        rows = []
        for tp in tps:
            start = starts.get(tp)
            end = ends[tp].offset if ends.get(tp) else None
            started = start is not None and start >= 0
            rows.append({"topic": tp[0], "partition": tp[1],
                         "start_offset": start if started else None, "end": end,
                         "lag": max(0, end - start) if started and end is not None else None,
                         "members": [m.member_id for m in owners.get(tp, [])]})
        members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                    "member_epoch": m.member_epoch,
                    "assignment": [[t, p] for t, p in m.assignment]} for m in d.members]
        return {"group_id": gid, "type": "share", "state": d.state,
                "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
                "members": members, "partitions": rows,
                "total_lag": sum(r["lag"] for r in rows if r["lag"] is not None),
                "topics": sorted({r["topic"] for r in rows}),
                "history": self.sampler.series(gid)}

    def is_share(self, gid: str) -> bool:
        listed = (self.sampler.latest or {}).get(gid)
        return listed is not None and listed.group_type == "share"

    async def group(self, gid: str) -> dict:
        timeout = self.settings.request_timeout_s

        def read(admin):
            d = admin.describe_groups([gid])[gid]
            committed = admin.list_group_offsets(gid)
            owner = {tp: m for m in d.members for tp in m.assignment}
            # every partition of the topics it reads; lag from earliest where none committed
            tps = partitions_read(admin, set(committed) | set(owner))
            ends = admin.list_offsets({tp: "latest" for tp in tps}) if tps else {}
            bare = [tp for tp in tps if tp not in committed]
            starts = admin.list_offsets({tp: "earliest" for tp in bare}) if bare else {}
            return d, committed, owner, tps, ends, starts
        d, committed, owner, tps, ends, starts = await self.pool.admin(read)
        behind = {tp: committed[tp][0] for tp in tps
                  if tp in committed and ends.get(tp) and committed[tp][0] < ends[tp].offset}
        at = await self.pool.run(records_at, self.settings, behind, timeout) if behind else {}
        now_ms = int(time.time() * 1000)
        rows = []
        for tp in tps:
            c = committed.get(tp, (None, ""))[0]
            end = ends[tp].offset if ends.get(tp) else None
            base = c if c is not None else (starts[tp].offset if starts.get(tp) else None)
            lag = max(0, end - base) if base is not None and end is not None else None
            rec = at.get(tp)
            time_lag = (max(0, now_ms - rec.timestamp) if rec is not None else
                        (0 if lag == 0 else None))
            m = owner.get(tp)
            rows.append({"topic": tp[0], "partition": tp[1], "committed": c, "end": end,
                         "lag": lag, "lag_from_earliest": c is None and lag is not None,
                         "time_lag_ms": time_lag,
                         "member_id": m.member_id if m else None,
                         "client_id": m.client_id if m else None,
                         "host": m.host if m else None})
        members = [{"member_id": m.member_id, "instance_id": m.group_instance_id,
                    "client_id": m.client_id, "host": m.host,
                    "assignment": [[t, p] for t, p in m.assignment]} for m in d.members]
        listed = (self.sampler.latest or {}).get(gid)
        # ListGroups v5+ says classic or consumer (KIP-848); older brokers only have classic.
        group_type = (listed.group_type if listed is not None and listed.group_type
                      else "classic")
        known_lags = [r["lag"] for r in rows if r["lag"] is not None]
        time_lags = [r["time_lag_ms"] for r in rows if r["time_lag_ms"] is not None]
        return {"group_id": gid, "state": d.state, "protocol_type": d.protocol_type,
                "protocol": d.protocol,
                "type": group_type,
                "members": members, "partitions": rows,
                "total_lag": sum(known_lags),
                "lag_from_earliest": any(r["lag_from_earliest"] for r in rows), "max_time_lag_ms": max(time_lags, default=None),
                "topics": sorted({r["topic"] for r in rows}),
                "history": self.sampler.series(gid)}

    # -- changes ------------------------------------------------------------------------------
    async def reset_plan(self, gid: str, strategy: str, value: str | None, topic: str | None,
                         execute: bool) -> dict:
        """Before/after per partition; applied when execute. Refused (ResetRefused) as
        Kafka's tool refuses: active members, unknown strategy, bad value."""
        if strategy not in STRATEGIES:
            raise ResetRefused(f"unknown reset strategy {strategy!r}; use one of "
                               f"{', '.join(STRATEGIES)}")
        number = None
        if strategy in ("offset", "shift"):
            try:
                number = int(str(value).strip())
            except (TypeError, ValueError):
                raise ResetRefused(f"{strategy} needs a whole number, got {value!r}") from None
        elif strategy == "timestamp":
            number = parse_timestamp(str(value or ""))

        def plan(admin):
            d = admin.describe_groups([gid])[gid]
            if d.state not in _INACTIVE:
                raise ResetRefused(f"Assignments can only be reset if the group '{gid}' is "
                                   f"inactive, but the current state is {d.state}. Stop its "
                                   "consumers first.")
            current = {tp: o for tp, (o, _) in admin.list_group_offsets(gid).items()}
            if topic:
                desc = admin.describe_topics([topic])[topic]
                tps = [(topic, p.partition) for p in desc.partitions]
            else:
                tps = sorted(current)
            if not tps:
                raise ResetRefused(f"group {gid!r} has no committed offsets; name a topic "
                                   "to reset")
            lo = {tp: o.offset for tp, o in admin.list_offsets(
                {tp: "earliest" for tp in tps}).items() if o}
            hi = {tp: o.offset for tp, o in admin.list_offsets(
                {tp: "latest" for tp in tps}).items() if o}
            if strategy == "earliest":
                target = dict(lo)
            elif strategy == "latest":
                target = dict(hi)
            elif strategy == "offset":
                target = {tp: number for tp in tps}
            elif strategy == "timestamp":
                found = admin.list_offsets({tp: number for tp in tps})
                target = {tp: found[tp].offset if found.get(tp) else hi[tp] for tp in tps}
            else:
                target = {tp: current.get(tp, lo[tp]) + number for tp in tps}
            target = {tp: min(max(o, lo[tp]), hi[tp]) for tp, o in target.items()}  # clamp
            if execute:
                admin.alter_group_offsets(gid, target)
            return [{"topic": t, "partition": p, "before": current.get((t, p)),
                     "after": target[(t, p)], "lag_after": hi[(t, p)] - target[(t, p)]}
                    for t, p in sorted(target)]
        rows = await self.pool.admin(plan)
        if execute:
            try:
                await self.sampler.sample()      # the list and the chart show it at once
            except Exception:
                pass
        return {"group_id": gid, "strategy": strategy, "value": value, "topic": topic,
                "executed": execute, "partitions": rows}

    async def delete(self, gid: str) -> None:
        await self.pool.admin(lambda a: a.delete_groups([gid]))
        try:
            await self.sampler.sample()
        except Exception:
            pass

