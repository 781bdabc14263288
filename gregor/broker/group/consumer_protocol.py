"""The little of Kafka's ConsumerProtocol the coordinator reads: the topics of a subscription
(OffsetDelete refuses to delete offsets of subscribed topics, as Kafka does)."""
from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscription_topics(data: bytes) -> set[str] | None:
    """The topic names of a ConsumerProtocolSubscription (every version starts with the version
    and the topic array), or None when the bytes do not parse."""
    try:
        pos = 2
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0 or n > len(data):
            return None
        topics = set()
        for _ in range(n):
            (size,) = _I16.unpack_from(data, pos)
            pos += 2
            if size < 0 or pos + size > len(data):
                return None
            topics.add(bytes(data[pos:pos + size]).decode())
            pos += size
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
