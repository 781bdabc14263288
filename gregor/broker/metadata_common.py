"""What a Metadata answer shares whether one broker answers it (apis/metadata.py) or a cluster
member from its metadata cache (cluster/metadata_api.py): topics asked for by id, the entry
of an unknown topic id, the internal topics, and the "not asked for" authorized-operations
value (KIP-430)."""
from __future__ import annotations

from typing import Callable

from ..protocol.errors import ErrorCode

INTERNAL = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
NO_AUTHORIZED_OPS = -2147483648


ZERO_ID = bytes(16)


def requested_names(requested: list[dict], ids: Callable[[], dict[bytes, str]]) -> list:
    """The names asked for; a topic asked for by id alone (v12) is looked up in ids() (built
    only then), and stays bytes (its id) when no topic has it."""
    out, by_id = [], None
    for t in requested:
        name, topic_id = t.get("name"), t.get("topic_id") or ZERO_ID
        if name is None and topic_id != ZERO_ID:
            by_id = ids() if by_id is None else by_id
            name = by_id.get(topic_id, topic_id)
        out.append(name)
    return out


def unknown_topic_id(topic_id: bytes) -> dict:
    return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id,
            "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_AUTHORIZED_OPS}
