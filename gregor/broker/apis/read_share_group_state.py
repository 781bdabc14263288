"""ReadShareGroupState (84): a share-partition leader reads a share-partition's durable state
from this broker, its share coordinator (share/coordinator.py). CLUSTER_ACTION on the
cluster; NOT_COORDINATOR when this broker does not lead the key's `__share_group_state`
partition; FENCED_LEADER_EPOCH for a leader older than one that read or wrote it already."""
from __future__ import annotations

from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._share_common import E, share_service

API_KEY = 84
VERSIONS = (0, 0)


def _result(pidx: int, code: int, state=None) -> dict:
    return {"partition": pidx, "error_code": code, "error_message": None,
            "state_epoch": state["state_epoch"] if state else 0,
            "start_offset": state["start_offset"] if state else -1,
            "state_batches": [{"first_offset": f, "last_offset": la, "delivery_state": s,
                               "delivery_count": c} for f, la, s, c in state["batches"]]
            if state else []}


def handle(broker, ctx, request):
    service = share_service(broker)
    denied = cluster_denied(broker, ctx, CLUSTER_ACTION)
    out = []
    for t in request["topics"]:
        tid = bytes(t["topic_id"])
        parts = []
        for p in t["partitions"]:
            if denied:
                parts.append(_result(p["partition"], E.CLUSTER_AUTHORIZATION_FAILED))
                continue
            if service is None:
                parts.append(_result(p["partition"], E.COORDINATOR_NOT_AVAILABLE))
                continue
            code, state = service.coordinator.read(
                (request["group_id"], tid, p["partition"]), p["leader_epoch"])
            parts.append(_result(p["partition"], code, None if code else state))
        out.append({"topic_id": tid, "partitions": parts})
    return {"results": out}
