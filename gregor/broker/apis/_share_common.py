"""What the share-group handlers share: the broker's share service, and whether a group id
already belongs to a classic or consumer group (a group id has one type, as in Kafka)."""
from __future__ import annotations

from ...protocol.errors import ErrorCode

E = ErrorCode
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


def share_service(broker):
    return getattr(broker, "share", None)


def other_group_type(broker, group_id: str) -> str | None:
    """'classic' / 'consumer' when the group coordinator holds a live group of that id."""
    coord = getattr(broker, "groups", None)
    coord = getattr(coord, "coordinator", None)
    group = coord.groups.get(group_id) if coord is not None else None
    if group is None or getattr(group, "dead", False):
        return None
    return "consumer" if type(group).__name__ == "ConsumerGroup" else "classic"
