"""OffsetCommit (key 8): store the committed offsets of a consumer group."""
from ..schema import Api, F, NULL

API = Api(
    key=8, name="OffsetCommit", valid=(0, 9), flexible=8,
    request=[
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", v="1+", default=-1),
        F("member_id", "string", v="1+"),
        F("group_instance_id", "string", v="7+", nullable="7+", default=NULL),
        F("retention_time_ms", "int64", v="2-4", default=-1),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", v="6+", default=-1),
                F("commit_timestamp", "int64", v="1", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", v="3+"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)
