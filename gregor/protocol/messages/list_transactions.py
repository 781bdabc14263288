"""ListTransactions (key 66): transactional ids a coordinator knows, with filters (KIP-664)."""
from ..schema import Api, F

API = Api(
    key=66, name="ListTransactions", valid=(0, 1), flexible=0,
    request=[
        F("state_filters", "[]string"),
        F("producer_id_filters", "[]int64"),
        F("duration_filter", "int64", v="1+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("unknown_state_filters", "[]string"),
        F("transaction_states", "[]", fields=[
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("transaction_state", "string"),
        ]),
    ],
)
