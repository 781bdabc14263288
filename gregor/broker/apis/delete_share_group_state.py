"""DeleteShareGroupState (86): the group coordinator deletes share-partitions' state at this
broker, their share coordinator (share/coordinator.py); answered once the tombstone is
committed to `__share_group_state`. CLUSTER_ACTION on the cluster; NOT_COORDINATOR when this
broker does not lead the key's partition. Deleting a key without state succeeds."""
from __future__ import annotations

from ._share_state_common import answer_when_written

API_KEY = 86
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    return answer_when_written(broker, ctx, request,
                               lambda coordinator, key, _p, done: coordinator.delete(key, done))
