"""ReadShareGroupStateSummary (87): the group coordinator reads share-partitions' state epoch
and start offset from this broker, their share coordinator (share/coordinator.py), for
DescribeShareGroupOffsets. Start offset -1: the share-partition has no state. CLUSTER_ACTION
on the cluster; NOT_COORDINATOR when this broker does not lead the key's partition;
FENCED_LEADER_EPOCH for a leader epoch (other than -1) older than one that read or wrote it."""
from __future__ import annotations

from ._share_state_common import answer_each

API_KEY = 87
VERSIONS = (0, 0)


def _one(service, key, p):
    code, state_epoch, start = service.coordinator.summary(key, p["leader_epoch"])
    return {"error_code": code, "state_epoch": max(state_epoch, 0) if not code else 0,
            "start_offset": start if not code else -1}


def handle(broker, ctx, request):
    return answer_each(broker, ctx, request, _one, {"state_epoch": 0, "start_offset": -1})
