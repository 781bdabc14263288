"""ListTransactions (66): the transactional ids this coordinator owns, filtered by state,
producer id and (v1) how long the transaction has been open."""
from __future__ import annotations

from ..security.checks import DESCRIBE, TRANSACTIONAL_ID, allowed_names
from ._txn_common import E, coordinator

API_KEY = 66
VERSIONS = (0, 1)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    if coord is None:
        return {"throttle_time_ms": 0, "error_code": E.COORDINATOR_NOT_AVAILABLE,
                "unknown_state_filters": [], "transaction_states": []}
    states, unknown = coord.list(request["state_filters"], request["producer_id_filters"],
                                 request.get("duration_filter", -1))
    if broker.authorizer is not None:
        # only the transactional ids the principal may DESCRIBE (never an error)
        ok = allowed_names(broker, ctx, DESCRIBE, TRANSACTIONAL_ID,
                           (s["transactional_id"] for s in states), log_denied=False)
        states = [s for s in states if s["transactional_id"] in ok]
    return {"throttle_time_ms": 0, "error_code": E.NONE, "unknown_state_filters": unknown,
            "transaction_states": states}
