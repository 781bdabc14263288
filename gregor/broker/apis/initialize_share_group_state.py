"""InitializeShareGroupState (83): the group coordinator sets a share-partition's state at
this broker, its share coordinator (share/coordinator.py): a new state epoch and start
offset, nothing in flight; answered once committed to `__share_group_state`. CLUSTER_ACTION
on the cluster; NOT_COORDINATOR when this broker does not lead the key's partition;
FENCED_STATE_EPOCH for a state epoch older than the key's; INVALID_REQUEST for a start
offset below -1."""
from __future__ import annotations

from ._share_common import E
from ._share_state_common import answer_when_written

API_KEY = 83
VERSIONS = (0, 0)


def _start(coordinator, key, p, done):
    if p["start_offset"] < -1 or p["state_epoch"] < 0:
        done(E.INVALID_REQUEST)
        return
    coordinator.initialize(key, p["state_epoch"], p["start_offset"], done)


def handle(broker, ctx, request):
    return answer_when_written(broker, ctx, request, _start)
