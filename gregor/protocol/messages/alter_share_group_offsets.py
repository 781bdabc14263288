"""AlterShareGroupOffsets (key 91): set the share-partition start offsets of an empty share
group (kafka-share-groups.sh --reset-offsets --execute). v0."""
from ..schema import Api, F, NULL

API = Api(
    key=91, name="AlterShareGroupOffsets", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("start_offset", "int64"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("responses", "[]", fields=[
            F("topic_name", "string"),
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=NULL),
            ]),
        ]),
    ],
)
