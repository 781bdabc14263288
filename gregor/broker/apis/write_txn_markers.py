"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions this broker leads.

Transaction coordinators of a cluster send it to partition leaders; operators send it through
admin tools to abort a transaction whose coordinator state was lost (kafka-python's
`abort_transaction`, Kafka's kafka-transactions.sh). Each partition is answered once its marker
is committed like an acks=all write; the writing is the coordinator's own (txn/service.py).
"""
from __future__ import annotations

from ..txn.service import LocalMarkers
from ...protocol.errors import ErrorCode
from ..security.checks import ALTER, CLUSTER_ACTION, cluster_allowed, cluster_denied
from ._txn_common import respond_later

API_KEY = 27
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    # ALTER on the cluster (operators' tools), else CLUSTER_ACTION (coordinators)
    if not cluster_allowed(broker, ctx, ALTER, log_denied=False) and \
            cluster_denied(broker, ctx, CLUSTER_ACTION):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"markers": [{"producer_id": m["producer_id"], "topics": [
            {"name": t["name"], "partitions": [{"partition_index": i, "error_code": code}
                                               for i in t["partition_indexes"]]}
            for t in m["topics"]]} for m in request["markers"]]}
    markers = LocalMarkers(broker, int(broker.config.get("request.timeout.ms")))

    async def run():
        out = []
        for m in request["markers"]:
            parts = {(t["name"], i) for t in m["topics"] for i in t["partition_indexes"]}
            codes = await markers.write(m["producer_id"], m["producer_epoch"],
                                        m["transaction_result"], m["coordinator_epoch"], parts)
            by_topic: dict[str, list] = {}
            for (topic, index), code in sorted(codes.items()):
                by_topic.setdefault(topic, []).append({"partition_index": index,
                                                       "error_code": code})
            out.append({"producer_id": m["producer_id"], "topics": [
                {"name": n, "partitions": ps} for n, ps in by_topic.items()]})
        return {"markers": out}
    return respond_later(run(), lambda body: body)
