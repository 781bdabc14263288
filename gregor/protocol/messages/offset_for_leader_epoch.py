"""OffsetForLeaderEpoch (key 23): end offset of a leader epoch, for log truncation checks."""
from ..schema import Api, F

API = Api(
    key=23, name="OffsetForLeaderEpoch", valid=(0, 4), flexible=4,
    request=[
        F("replica_id", "int32", v="3+", default=-2),
        F("topics", "[]", fields=[
            F("topic", "string"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("current_leader_epoch", "int32", v="2+", default=-1),
                F("leader_epoch", "int32"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", v="2+"),
        F("topics", "[]", fields=[
            F("topic", "string"),
            F("partitions", "[]", fields=[
                F("error_code", "int16"),
                F("partition", "int32"),
                F("leader_epoch", "int32", v="1+", default=-1),
                F("end_offset", "int64", default=-1),
            ]),
        ]),
    ],
)
