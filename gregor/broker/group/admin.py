"""DescribeGroups, ListGroups, DeleteGroups and the per-state counts for metrics: the group
coordinator's read side and its one destructive admin call, for classic and KIP-848 groups
alike (GroupCoordinator mixes this in; the state it reads lives there)."""
from __future__ import annotations

from typing import Callable

from ...protocol.errors import ErrorCode
from . import consumer_records
from . import log_records as L
from .consumer_group import ConsumerGroup
from .metadata import Group, GroupState

E = ErrorCode
S = GroupState


class GroupAdminMixin:
    def describe(self, group_id: str) -> dict:
        code = self.group_status(group_id)
        if code:
            return {"error_code": code, "group_id": group_id, "group_state": "",
                    "protocol_type": "", "protocol_data": "", "members": []}
        group = self.groups.get(group_id)
        # A consumer-protocol group is not a classic group: Kafka describes it as Dead here
        # (DescribeGroups v0-5); ConsumerGroupDescribe describes it.
        if group is None or isinstance(group, ConsumerGroup) or group.is_(S.DEAD) or \
                group.pending_creation:
            return {"error_code": E.NONE, "group_id": group_id, "group_state": "Dead",
                    "protocol_type": "", "protocol_data": "", "members": []}
        stable = group.is_(S.STABLE)
        return {"error_code": E.NONE, "group_id": group_id, "group_state": group.state.value,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol_name or "") if stable else "",
                "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata(group.protocol_name) if stable
                             else b"",
                             "member_assignment": m.assignment if stable else b""}
                            for m in group.members.values()]}

    def list_groups(self, states: set[str] | None = None,
                    types: set[str] | None = None) -> list[dict]:
        out = []
        states = {s.lower() for s in states or ()}
        types = {t.lower() for t in types or ()}
        for g in self.groups.values():
            if self.partitions.get(self.partition_of(g.group_id)) != "loaded":
                continue
            if isinstance(g, ConsumerGroup):
                kind, state, ptype = "consumer", g.state.value, "consumer"
                if g.dead:
                    continue
            else:
                if g.is_(S.DEAD) or g.pending_creation:
                    continue
                kind, state, ptype = "classic", g.state.value, g.protocol_type or ""
            if states and state.lower() not in states:
                continue
            if types and kind not in types:
                continue
            out.append({"group_id": g.group_id, "protocol_type": ptype,
                        "group_state": state, "group_type": kind})
        return out

    def groups_by_state(self) -> dict[str, int]:
        """Classic groups by state."""
        counts = {s.value: 0 for s in S if s is not S.DEAD}
        for g in self.groups.values():
            if not isinstance(g, ConsumerGroup) and not g.is_(S.DEAD) and \
                    not g.pending_creation:
                counts[g.state.value] += 1
        return counts

    def consumer_groups_by_state(self) -> dict[str, int]:
        """KIP-848 consumer groups by state."""
        from .consumer_group import ConsumerGroupState as CS
        counts = {s.value: 0 for s in CS if s is not CS.DEAD}
        for g in self.groups.values():
            if isinstance(g, ConsumerGroup) and not g.dead:
                counts[g.state.value] += 1
        return counts

    def delete_groups(self, group_ids: list[str], respond: Callable[[dict], None]) -> None:
        """Delete empty groups and their offsets: {group_id: error}."""
        results: dict[str, int] = {}
        writes: dict[int, list] = {}
        deleted: list[Group] = []
        for gid in group_ids:
            code = self.group_status(gid)
            group = self.groups.get(gid)
            if code:
                results[gid] = code
            elif isinstance(group, ConsumerGroup):
                if group.members:
                    results[gid] = E.NON_EMPTY_GROUP
                    continue
                records = [(L.encode_offset_key(gid, t, p), None) for t, p in group.offsets]
                records += consumer_records.group_tombstones(group)
                writes.setdefault(self.partition_of(gid), []).extend(records)
                self._unload_consumer_group(group)
                self.groups.pop(gid, None)
                results[gid] = E.NONE
            elif group is None or group.is_(S.DEAD):
                results[gid] = E.GROUP_ID_NOT_FOUND
            elif not group.is_(S.EMPTY):
                results[gid] = E.NON_EMPTY_GROUP
            else:
                records = [(L.encode_offset_key(gid, t, p), None) for t, p in group.offsets]
                records.append((L.encode_group_key(gid), None))
                writes.setdefault(self.partition_of(gid), []).extend(records)
                deleted.append(group)
                results[gid] = E.NONE
        for g in deleted:
            g.transition(S.DEAD, self.clock())
            self.groups.pop(g.group_id, None)
        if not writes:
            return respond(results)
        pending = {"n": len(writes)}

        def done(code: int, _offset: int = -1) -> None:
            pending["n"] -= 1
            if pending["n"] == 0:
                respond(results)
        for partition, records in writes.items():
            self.store.write(partition, records, done)
