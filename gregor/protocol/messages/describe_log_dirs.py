"""DescribeLogDirs (key 35): log directories and the size of each partition in them (KIP-113);
v4 adds the file system's total and usable bytes. Served by gregor/broker/apis/
describe_log_dirs.py; the admin client's describe_log_dirs (partition sizes in `gregor
console`) sends it."""
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
