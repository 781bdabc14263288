"""DescribeLogDirs (key 35): log directories and the size of each partition in them (KIP-113).
Described for the admin client (partition sizes in `gregor console`); a broker only serves it
when it registers a handler."""
from ..schema import Api, F

API = Api(
    key=35, name="DescribeLogDirs", valid=(0, 4), flexible=2,
    request=[
        F("topics", "[]", nullable="0+", fields=[
            F("topic", "string"),
            F("partitions", "[]int32"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", v="3+"),
        F("results", "[]", fields=[
            F("error_code", "int16"),
            F("log_dir", "string"),
            F("topics", "[]", fields=[
                F("name", "string"),
                F("partitions", "[]", fields=[
                    F("partition_index", "int32"),
                    F("partition_size", "int64"),
                    F("offset_lag", "int64"),
                    F("is_future_key", "bool"),
                ]),
            ]),
            F("total_bytes", "int64", v="4+", default=-1),
            F("usable_bytes", "int64", v="4+", default=-1),
        ]),
    ],
)
