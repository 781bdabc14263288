"""DescribeShareGroupOffsets (key 90): the share-partition start offsets of share groups
(kafka-share-groups.sh --describe). v0, as Kafka 4.1+ serves it."""
from ..schema import Api, F, NULL

API = Api(
    key=90, name="DescribeShareGroupOffsets", valid=(0, 0), flexible=0,
    request=[
        F("groups", "[]", fields=[
            F("group_id", "string"),
            F("topics", "[]", nullable="0+", fields=[
                F("topic_name", "string"),
                F("partitions", "[]int32"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("groups", "[]", fields=[
            F("group_id", "string"),
            F("topics", "[]", fields=[
                F("topic_name", "string"),
                F("topic_id", "uuid"),
                F("partitions", "[]", fields=[
                    F("partition_index", "int32"),
                    F("start_offset", "int64"),
                    F("leader_epoch", "int32"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=NULL),
                ]),
            ]),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
        ]),
    ],
)
