"""OffsetFetch (9): a group's committed offsets (one group before v8, several from v8).
require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for partitions with a commit still pending
(in a transaction or being written); clients retry."""
from __future__ import annotations

from ._group_common import E, coordinator

API_KEY = 9
VERSIONS = (0, 9)


def _fetch(coord, group_id: str, topics, require_stable: bool, member_id=None,
           member_epoch: int = -1) -> tuple[int, list]:
    partitions = None if topics is None else \
        [(t["name"], p) for t in topics for p in t["partition_indexes"]]
    if coord is None:
        return E.COORDINATOR_NOT_AVAILABLE, []
    code, found = coord.fetch_offsets(group_id, partitions, require_stable, member_id,
                                      member_epoch)
    if code:
        found = {tp: (-1, -1, "", code) for tp in partitions or ()}
    out: dict[str, list] = {}
    for (topic, partition), (offset, epoch, metadata, err) in found.items():
        out.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": offset,
            "committed_leader_epoch": epoch, "metadata": metadata, "error_code": err})
    return code, [{"name": t, "partitions": ps} for t, ps in out.items()]


def handle(broker, ctx, request):
    v = ctx.api_version
    coord = coordinator(broker)
    stable = bool(request.get("require_stable")) if v >= 7 else False
    if v < 8:
        code, topics = _fetch(coord, request["group_id"], request["topics"], stable)
        if v < 2 and code:
            # No top-level error before v2: every partition carries it.
            for t in topics:
                for p in t["partitions"]:
                    p["error_code"] = code
        return {"throttle_time_ms": 0, "topics": topics, "error_code": code}
    groups = []
    for g in request["groups"]:
        # v9: a consumer-protocol group's member says who it is (KIP-848).
        code, topics = _fetch(coord, g["group_id"], g["topics"], stable,
                              g.get("member_id"), g.get("member_epoch", -1))
        groups.append({"group_id": g["group_id"], "topics": topics, "error_code": code})
    return {"throttle_time_ms": 0, "groups": groups}
