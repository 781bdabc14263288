"""AddPartitionsToTxn (key 24): register partitions with an ongoing transaction."""
from ..schema import Api, F

API = Api(
    key=24, name="AddPartitionsToTxn", valid=(0, 5), flexible=3,
    request=[
        F("transactions", "[]", v="4+", fields=[
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("verify_only", "bool"),
            F("topics", "[]", fields=[
                F("name", "string"),
                F("partitions", "[]int32"),
            ]),
        ]),
        F("v3_and_below_transactional_id", "string", v="0-3"),
        F("v3_and_below_producer_id", "int64", v="0-3"),
        F("v3_and_below_producer_epoch", "int16", v="0-3"),
        F("v3_and_below_topics", "[]", v="0-3", fields=[
            F("name", "string"),
            F("partitions", "[]int32"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", v="4+"),
        F("results_by_transaction", "[]", v="4+", fields=[
            F("transactional_id", "string"),
            F("topic_results", "[]", fields=[
                F("name", "string"),
                F("results_by_partition", "[]", fields=[
                    F("partition_index", "int32"),
                    F("partition_error_code", "int16"),
                ]),
            ]),
        ]),
        F("results_by_topic_v3_and_below", "[]", v="0-3", fields=[
            F("name", "string"),
            F("results_by_partition", "[]", fields=[
                F("partition_index", "int32"),
                F("partition_error_code", "int16"),
            ]),
        ]),
    ],
)
