"""ListOffsets (key 2): find offsets by timestamp (earliest, latest, or a time)."""
from ..schema import Api, F

API = Api(
    key=2, name="ListOffsets", valid=(0, 10), flexible=6,
    request=[
        F("replica_id", "int32"),
        F("isolation_level", "int8", v="2+"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", v="4+", default=-1),
                F("timestamp", "int64"),
                F("max_num_offsets", "int32", v="0", default=1),
            ]),
        ]),
        F("timeout_ms", "int32", v="10+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="2+"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", "[]int64", v="0"),
                F("timestamp", "int64", v="1+", default=-1),
                F("offset", "int64", v="1+", default=-1),
                F("leader_epoch", "int32", v="4+", default=-1),
            ]),
        ]),
    ],
)
