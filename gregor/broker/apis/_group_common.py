"""What the group API handlers share: the coordinator, answers that wait, and the client host
as Kafka reports it."""
from __future__ import annotations

import asyncio

from ...protocol.errors import ErrorCode

E = ErrorCode


def coordinator(broker):
    """The broker's group coordinator (creating `__consumer_offsets` on first use)."""
    return getattr(broker, "group_coordinator", None)


def later(build):
    """(future, respond): respond(result) resolves the future with build(result)."""
    fut = asyncio.get_running_loop().create_future()

    def respond(result) -> None:
        if not fut.done():
            fut.set_result(build(result))
    return fut, respond


def client_host(ctx) -> str:
    peer = ctx.peer
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")


def topic_partitions(topics, field: str = "partitions", index: str = "partition_index"):
    """[(topic, partition, entry)] of a request's topics array."""
    return [(t["name"], p[index], p) for t in topics for p in t[field]]


def by_topic(results: dict, extra=lambda tp, v: {}) -> list[dict]:
    """{(topic, partition): error} as a response's topics array (request order kept)."""
    topics: dict[str, list] = {}
    for (topic, partition), code in results.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "error_code": code,
                                             **extra((topic, partition), code)})
    return [{"name": t, "partitions": ps} for t, ps in topics.items()]
