"""OffsetFetch (key 9): read the committed offsets of a consumer group."""
from ..schema import Api, F, NULL

API = Api(
    key=9, name="OffsetFetch", valid=(0, 9), flexible=6,
    request=[
        F("group_id", "string", v="0-7"),
        F("topics", "[]", v="0-7", nullable="2-7", fields=[
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ]),
        F("groups", "[]", v="8+", fields=[
            F("group_id", "string"),
            F("member_id", "string", v="9+", nullable="9+", default=NULL),
            F("member_epoch", "int32", v="9+", default=-1),
            F("topics", "[]", nullable="0+", fields=[
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            ]),
        ]),
        F("require_stable", "bool", v="7+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="3+"),
        F("topics", "[]", v="0-7", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", v="5-7", default=-1),
                F("metadata", "string", nullable="0+"),
                F("error_code", "int16"),
            ]),
        ]),
        F("error_code", "int16", v="2-7"),
        F("groups", "[]", v="8+", fields=[
            F("group_id", "string"),
            F("topics", "[]", fields=[
                F("name", "string"),
                F("partitions", "[]", fields=[
                    F("partition_index", "int32"),
                    F("committed_offset", "int64"),
                    F("committed_leader_epoch", "int32", default=-1),
                    F("metadata", "string", nullable="0+"),
                    F("error_code", "int16"),
                ]),
            ]),
            F("error_code", "int16"),
        ]),
    ],
)
