"""ControlledShutdown (7): a broker about to stop asks the controller to hand its
leaderships to other in-sync replicas and take it out of the ISRs first, so clients move to
the new leaders before it closes its connections. Answered by the controller only
(NOT_CONTROLLER elsewhere); the answer lists the partitions it still leads (no other in-sync
replica), which the broker asks about again after controlled.shutdown.retry.backoff.ms.
A request carrying an earlier broker epoch than the broker's current registration (v2+) is
STALE_BROKER_EPOCH, as in Kafka.
A single-node broker has nothing to hand over and answers at once.
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError
from ..security.checks import CLUSTER_ACTION, cluster_denied
from ._txn_common import respond_later

API_KEY = 7
VERSIONS = (1, 3)


def handle(broker, ctx, request):
    if cluster_denied(broker, ctx, CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "remaining_partitions": []}
    if broker.cluster is None:
        return {"error_code": ErrorCode.NONE, "remaining_partitions": []}
    member = broker.cluster

    async def run():
        try:
            return await member.controller.controlled_shutdown(
                member.controller.view, request["broker_id"], request.get("broker_epoch", -1))
        except KafkaError as e:
            return e

    def build(result):
        if isinstance(result, KafkaError):
            return {"error_code": result.code, "remaining_partitions": []}
        return {"error_code": ErrorCode.NONE, "remaining_partitions": [
            {"topic_name": t, "partition_index": p} for t, p in (result or [])]}
    return respond_later(run(), build)
