"""DescribeTransactions (65): the coordinator's state of each transactional id asked for."""
from __future__ import annotations

from ._txn_common import E, coordinator

API_KEY = 65
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    states = []
    for tid in request["transactional_ids"]:
        if coord is None:
            states.append({"error_code": E.COORDINATOR_NOT_AVAILABLE, "transactional_id": tid,
                           "transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
        else:
            states.append(coord.describe(tid))
    return {"throttle_time_ms": 0, "transaction_states": states}
