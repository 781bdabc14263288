"""WriteTxnMarkers (key 27): a transaction coordinator asks a partition leader to write
COMMIT/ABORT markers (broker to broker; kafka-python's admin abort_transaction sends it too)."""
from ..schema import Api, F

API = Api(
    key=27, name="WriteTxnMarkers", valid=(0, 1), flexible=1,
    request=[
        F("markers", "[]", fields=[
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("transaction_result", "bool"),
            F("topics", "[]", fields=[
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            ]),
            F("coordinator_epoch", "int32"),
        ]),
    ],
    response=[
        F("markers", "[]", fields=[
            F("producer_id", "int64"),
            F("topics", "[]", fields=[
                F("name", "string"),
                F("partitions", "[]", fields=[
                    F("partition_index", "int32"),
                    F("error_code", "int16"),
                ]),
            ]),
        ]),
    ],
)
