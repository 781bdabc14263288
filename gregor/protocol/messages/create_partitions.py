"""CreatePartitions (key 37): add partitions to existing topics."""
from ..schema import Api, F, NULL

API = Api(
    key=37, name="CreatePartitions", valid=(0, 3), flexible=2,
    request=[
        F("topics", "[]", fields=[
            F("name", "string"),
            F("count", "int32"),
            F("assignments", "[]", nullable="0+", fields=[
                F("broker_ids", "[]int32"),
            ]),
        ]),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=[
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
        ]),
    ],
)
