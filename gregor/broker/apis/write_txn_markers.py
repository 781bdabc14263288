"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions this broker leads.

Transaction coordinators of a cluster send it to partition leaders; operators send it through
admin tools to abort a transaction whose coordinator state was lost (kafka-python's
`abort_transaction`, Kafka's kafka-transactions.sh). Each partition is answered once its marker
is committed like an acks=all write.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError
from ..coordinator_log import wait_committed
from ._txn_common import respond_later

API_KEY = 27
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    async def run():
        out = []
        timeout = int(broker.config.get("request.timeout.ms"))
        for m in request["markers"]:
            pid, epoch = m["producer_id"], m["producer_epoch"]
            waits, codes = [], {}
            for t in m["topics"]:
                for index in t["partition_indexes"]:
                    tp = (t["name"], index)
                    p = broker.replica_manager.get(*tp)
                    if p is None:
                        codes[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        continue
                    try:
                        offset = p.append_control_marker(pid, epoch, m["transaction_result"],
                                                         m["coordinator_epoch"])
                    except KafkaError as e:
                        codes[tp] = e.code
                        continue
                    waits.append((tp, p, offset))
            for tp, p, offset in waits:
                try:
                    await wait_committed(broker, p, offset + 1, timeout)
                    codes[tp] = ErrorCode.NONE
                except KafkaError as e:
                    codes[tp] = e.code
            by_topic: dict[str, list] = {}
            for (topic, index), code in codes.items():
                by_topic.setdefault(topic, []).append({"partition_index": index,
                                                       "error_code": code})
            out.append({"producer_id": pid, "topics": [
                {"name": n, "partitions": ps} for n, ps in by_topic.items()]})
        return {"markers": out}
    return respond_later(run(), lambda body: body)
