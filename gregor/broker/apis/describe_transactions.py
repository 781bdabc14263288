"""DescribeTransactions (65): the coordinator's state of each transactional id asked for."""
from __future__ import annotations

from ..security.checks import DESCRIBE, TOPIC, TRANSACTIONAL_ID, allowed, allowed_names
from ._txn_common import E, coordinator

API_KEY = 65
VERSIONS = (0, 0)


def handle(broker, ctx, request):
    coord = coordinator(broker)
    states = []
    for tid in request["transactional_ids"]:
        code = E.COORDINATOR_NOT_AVAILABLE if coord is None else \
            E.NONE if allowed(broker, ctx, DESCRIBE, TRANSACTIONAL_ID, tid) else \
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if code:
            states.append({"error_code": code, "transactional_id": tid,
                           "transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
        else:
            state = coord.describe(tid)
            if broker.authorizer is not None and state.get("topics"):
                # only the partitions of topics the principal may DESCRIBE
                ok = allowed_names(broker, ctx, DESCRIBE, TOPIC,
                                   (t["topic"] for t in state["topics"]))
                state["topics"] = [t for t in state["topics"] if t["topic"] in ok]
            states.append(state)
    return {"throttle_time_ms": 0, "transaction_states": states}
