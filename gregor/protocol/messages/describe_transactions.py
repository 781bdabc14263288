"""DescribeTransactions (key 65): state of transactional ids (KIP-664)."""
from ..schema import Api, F

API = Api(
    key=65, name="DescribeTransactions", valid=(0, 0), flexible=0,
    request=[
        F("transactional_ids", "[]string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("transaction_states", "[]", fields=[
            F("error_code", "int16"),
            F("transactional_id", "string"),
            F("transaction_state", "string"),
            F("transaction_timeout_ms", "int32"),
            F("transaction_start_time_ms", "int64"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("topics", "[]", fields=[
                F("topic", "string"),
                F("partitions", "[]int32"),
            ]),
        ]),
    ],
)
