"""WriteShareGroupState (85): a share-partition leader writes a share-partition's durable
state through this broker, its share coordinator (share/coordinator.py); each partition is
answered once its snapshot is committed to `__share_group_state`. CLUSTER_ACTION on the
cluster; NOT_COORDINATOR / FENCED_LEADER_EPOCH as for ReadShareGroupState."""
from __future__ import annotations

import asyncio

from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._share_common import E, share_service

API_KEY = 85
VERSIONS = (0, 0)


def _state(p: dict) -> dict:
    batches = [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
               for b in p["state_batches"]]
    start = p["start_offset"]
    end = max([b[1] + 1 for b in batches], default=start)
    return {"state_epoch": p["state_epoch"], "start_offset": start,
            "end_offset": max(start, end), "batches": batches}


def handle(broker, ctx, request):
    service = share_service(broker)
    denied = cluster_denied(broker, ctx, CLUSTER_ACTION)
    loop = asyncio.get_running_loop()
    waits = []
    out = []
    for t in request["topics"]:
        tid = bytes(t["topic_id"])
        parts = []
        for p in t["partitions"]:
            entry = {"partition": p["partition"], "error_code": 0, "error_message": None}
            parts.append(entry)
            if denied or service is None:
                entry["error_code"] = E.CLUSTER_AUTHORIZATION_FAILED if denied \
                    else E.COORDINATOR_NOT_AVAILABLE
                continue
            fut = loop.create_future()

            def done(code, e=entry, f=fut):
                e["error_code"] = code
                if not f.done():
                    f.set_result(None)
            service.coordinator.write((request["group_id"], tid, p["partition"]), _state(p),
                                      p["leader_epoch"], done)
            waits.append(fut)
        out.append({"topic_id": tid, "partitions": parts})

    async def answer():
        await asyncio.gather(*waits)
        return {"results": out}
    return asyncio.ensure_future(answer())
