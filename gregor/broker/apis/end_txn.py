"""EndTxn (26): commit or abort the producer's transaction. Answered once the decision is
durable in `__transaction_state`; the markers follow in the background."""
from __future__ import annotations

from ..security.checks import TRANSACTIONAL_ID, WRITE, allowed
from ._txn_common import E, coordinator, fenced_for, respond_later

API_KEY = 26
VERSIONS = (0, 3)          # v4 adds TRANSACTION_ABORTABLE, v5 the KIP-890 part 2 epoch bump


def handle(broker, ctx, request):
    coord = coordinator(broker)
    convert = fenced_for(ctx.api_version, 2)
    if not allowed(broker, ctx, WRITE, TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE}
    return respond_later(
        coord.end_txn(request["transactional_id"], request["producer_id"],
                      request["producer_epoch"], request["committed"]),
        lambda code: {"throttle_time_ms": 0,
                      "error_code": convert(E.UNKNOWN_SERVER_ERROR if code is None else code)})
