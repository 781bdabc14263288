"""AddOffsetsToTxn (25): add the group's `__consumer_offsets` partition to the transaction, so
that offsets the producer commits for the group (TxnOffsetCommit) are committed or aborted with
it."""
from __future__ import annotations

from ..txn.coordinator import partition_for
from ..security.checks import GROUP, READ, TRANSACTIONAL_ID, WRITE, allowed
from ._txn_common import E, coordinator, fenced_for, respond_later

API_KEY = 25
VERSIONS = (0, 3)
OFFSETS_TOPIC = "__consumer_offsets"


def handle(broker, ctx, request):
    coord = coordinator(broker)
    convert = fenced_for(ctx.api_version, 2)
    if not allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": E.GROUP_AUTHORIZATION_FAILED}
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE}
    groups = broker.group_coordinator      # creates __consumer_offsets: the markers go there
    n = int(broker.config.get("offsets.topic.num.partitions"))
    tp = (OFFSETS_TOPIC, groups.partition_of(request["group_id"]) if groups is not None
          else partition_for(request["group_id"], n))
    return respond_later(
        coord.add_partitions(request["transactional_id"], request["producer_id"],
                             request["producer_epoch"], [tp]),
        lambda code: {"throttle_time_ms": 0,
                      "error_code": convert(E.UNKNOWN_SERVER_ERROR if code is None else code)})
