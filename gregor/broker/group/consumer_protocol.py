"""The little of the consumer protocol the coordinator reads: the topics of a subscription
(OffsetDelete refuses to delete offsets of subscribed topics, as Kafka does)."""
from __future__ import annotations

from ...protocol.consumer_protocol import decode_subscription
from ...protocol.primitives import DecodeError


def subscription_topics(data: bytes) -> set[str] | None:
    """The topic names of a member's subscription, or None when the bytes do not parse."""
    try:
        return set(decode_subscription(data).topics)
    except (DecodeError, UnicodeDecodeError, ValueError):
        return None
