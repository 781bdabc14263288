"""What the share coordinator's handlers (83-87) share: CLUSTER_ACTION on the cluster,
COORDINATOR_NOT_AVAILABLE without a share service, one result per share-partition the
request names, and answering once each partition's write is committed."""
from __future__ import annotations

import asyncio
from typing import Callable

from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._share_common import E, share_service


def answer_each(broker, ctx, request, one: Callable[..., dict], refused: dict) -> dict:
    """{"results": ...}: one(service, key, partition entry) gives each partition's result
    fields; a request without CLUSTER_ACTION, or to a broker without share groups, gets
    CLUSTER_AUTHORIZATION_FAILED / COORDINATOR_NOT_AVAILABLE (with the `refused` fields)."""
    service = share_service(broker)
    denied = cluster_denied(broker, ctx, CLUSTER_ACTION)
    out = []
    for t in request["topics"]:
        tid = bytes(t["topic_id"])
        parts = []
        for p in t["partitions"]:
            if denied or service is None:
                fields = {**refused, "error_code": E.CLUSTER_AUTHORIZATION_FAILED if denied
                          else E.COORDINATOR_NOT_AVAILABLE}
            else:
                fields = one(service, (request["group_id"], tid, p["partition"]), p)
            fields.update(partition=p["partition"], error_message=None)
            parts.append(fields)
        out.append({"topic_id": tid, "partitions": parts})
    return {"results": out}


def answer_when_written(broker, ctx, request, start: Callable) -> asyncio.Future:
    """start(coordinator, key, partition entry, done) begins one partition's write and
    calls done(error code) once it is committed or refused; the response follows the last."""
    loop = asyncio.get_running_loop()
    waits = []

    def one(service, key, p):
        entry = {"error_code": E.NONE}
        fut = loop.create_future()
        waits.append(fut)

        def done(code, e=entry, f=fut):
            e["error_code"] = code
            if not f.done():
                f.set_result(None)
        start(service.coordinator, key, p, done)
        return entry

    body = answer_each(broker, ctx, request, one, {})

    async def answer():
        await asyncio.gather(*waits)
        return body
    return asyncio.ensure_future(answer())
