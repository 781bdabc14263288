"""AddPartitionsToTxn (24): register partitions with the producer's ongoing transaction.

v0-v3 (clients) carry one transaction; v4+ carry several, and may ask only to verify that the
partitions are already in them (KIP-890, sent between brokers). Partitions of topics that do not
exist fail with UNKNOWN_TOPIC_OR_PARTITION and the rest of the request with
OPERATION_NOT_ATTEMPTED, as Kafka answers; otherwise every partition gets the coordinator's one
answer.
"""
from __future__ import annotations

from ..security.checks import (CLUSTER_ACTION, TRANSACTIONAL_ID, WRITE, allowed, cluster_denied,
                               denied_topics)
from ._txn_common import E, coordinator, fenced_for, respond_later

API_KEY = 24
VERSIONS = (0, 4)


INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})


def handle(broker, ctx, request):
    version = ctx.api_version
    convert = fenced_for(version, 2)
    if version >= 4 and cluster_denied(broker, ctx, CLUSTER_ACTION):
        # v4+ comes from brokers only (KIP-890)
        return {"throttle_time_ms": 0, "error_code": E.CLUSTER_AUTHORIZATION_FAILED,
                "results_by_transaction": []}
    if version <= 3:
        txns = [{"transactional_id": request["v3_and_below_transactional_id"],
                 "producer_id": request["v3_and_below_producer_id"],
                 "producer_epoch": request["v3_and_below_producer_epoch"],
                 "verify_only": False, "topics": request["v3_and_below_topics"]}]
    else:
        txns = request["transactions"]

    async def run():
        return [await _one(broker, t, convert, _client_denials(broker, ctx, t, version))
                for t in txns]

    def build(results):
        if version <= 3:
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results[0][1]}
        return {"throttle_time_ms": 0, "error_code": E.NONE,
                "results_by_transaction": [{"transactional_id": t["transactional_id"],
                                            "topic_results": r}
                                           for t, (_, r) in zip(txns, results)]}
    return respond_later(run(), build)


def _client_denials(broker, ctx, txn, version: int):
    """Clients (v0-3) need WRITE on the transactional id (else every partition answers
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: returned as an int) and on each topic; internal
    topics are never added this way (Kafka). Returns the denied topic names otherwise."""
    if version >= 4 or broker.authorizer is None:
        return ()
    if not allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, txn["transactional_id"]):
        return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    names = {t["name"] for t in txn["topics"]}
    return denied_topics(broker, ctx, WRITE, names - INTERNAL) | (names & INTERNAL)


async def _one(broker, txn, convert, denied=()):
    """(error, topic results) for one transaction."""
    parts = [(t["name"], p) for t in txn["topics"] for p in t["partitions"]]
    unknown = {tp for tp in parts if broker.replica_manager.get(*tp) is None
               and not _exists(broker, *tp)}
    coord = coordinator(broker)
    if isinstance(denied, int):
        codes = dict.fromkeys(parts, denied)
    elif denied:
        codes = {tp: E.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else
                 E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else
                 E.OPERATION_NOT_ATTEMPTED for tp in parts}
    elif unknown:
        codes = {tp: E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                 else E.OPERATION_NOT_ATTEMPTED for tp in parts}
    elif coord is None:
        codes = dict.fromkeys(parts, E.COORDINATOR_NOT_AVAILABLE)
    else:
        tid, pid, epoch = txn["transactional_id"], txn["producer_id"], txn["producer_epoch"]
        if txn.get("verify_only"):
            codes = {tp: coord.verify_partition(tid, pid, epoch, *tp) for tp in parts}
        else:
            code = convert(await coord.add_partitions(tid, pid, epoch, parts))
            codes = dict.fromkeys(parts, code)
    by_topic: dict[str, list] = {}
    for (topic, p), code in codes.items():
        by_topic.setdefault(topic, []).append({"partition_index": p,
                                               "partition_error_code": code})
    return E.NONE, [{"name": t, "results_by_partition": ps} for t, ps in by_topic.items()]


def _exists(broker, topic: str, partition: int) -> bool:
    t = broker.store.get(topic)
    return t is not None and 0 <= partition < t.partitions
