"""OffsetFetch (9): a group's committed offsets (one group before v8, several from v8).
require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for partitions with a commit still pending
(in a transaction or being written); clients retry."""
from __future__ import annotations

from ..security.checks import DESCRIBE, GROUP, TOPIC, allowed, allowed_names, denied_topics
from ._group_common import E, coordinator

API_KEY = 9
VERSIONS = (0, 9)


def _fetch(coord, group_id: str, topics, require_stable: bool, member_id=None,
           member_epoch: int = -1, error: int = 0) -> tuple[int, list]:
    partitions = None if topics is None else \
        [(t["name"], p) for t in topics for p in t["partition_indexes"]]
    if error:
        code, found = error, {}
    elif coord is None:
        return E.COORDINATOR_NOT_AVAILABLE, []
    else:
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


def _authorized_fetch(broker, ctx, coord, group_id: str, topics, require_stable: bool,
                      member_id=None, member_epoch: int = -1) -> tuple[int, list]:
    """_fetch as Kafka's KafkaApis authorizes it: DESCRIBE on the group (else
    GROUP_AUTHORIZATION_FAILED), and DESCRIBE on each topic: a topic asked for without it
    answers TOPIC_AUTHORIZATION_FAILED per partition; an all-topics fetch leaves it out."""
    if not allowed(broker, ctx, DESCRIBE, GROUP, group_id):
        return _fetch(None, group_id, topics, require_stable, error=E.GROUP_AUTHORIZATION_FAILED)
    denied = () if topics is None else denied_topics(broker, ctx, DESCRIBE,
                                                     (t["name"] for t in topics))
    asked = topics if not denied else [t for t in topics if t["name"] not in denied]
    code, out = _fetch(coord, group_id, asked, require_stable, member_id, member_epoch)
    if code:
        return code, out
    if topics is None and broker.authorizer is not None:
        ok = allowed_names(broker, ctx, DESCRIBE, TOPIC, (t["name"] for t in out))
        out = [t for t in out if t["name"] in ok]
    for t in topics or ():
        if t["name"] in denied:
            out.append({"name": t["name"], "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": "", "error_code": E.TOPIC_AUTHORIZATION_FAILED}
                for p in t["partition_indexes"]]})
    return code, out


def handle(broker, ctx, request):
    v = ctx.api_version
    coord = coordinator(broker)
    stable = bool(request.get("require_stable")) if v >= 7 else False
    if v < 8:
        code, topics = _authorized_fetch(broker, ctx, coord, request["group_id"],
                                         request["topics"], stable)
        if v < 2 and code:
            # No top-level error before v2: every partition carries it.
            for t in topics:
                for p in t["partitions"]:
                    p["error_code"] = code
        return {"throttle_time_ms": 0, "topics": topics, "error_code": code}
    groups = []
    for g in request["groups"]:
        # v9: a consumer-protocol group's member says who it is (KIP-848).
        code, topics = _authorized_fetch(broker, ctx, coord, g["group_id"], g["topics"], stable,
                                         g.get("member_id"), g.get("member_epoch", -1))
        groups.append({"group_id": g["group_id"], "topics": topics, "error_code": code})
    return {"throttle_time_ms": 0, "groups": groups}
