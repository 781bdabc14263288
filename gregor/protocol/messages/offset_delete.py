"""OffsetDelete (key 47): delete a group's committed offsets of partitions it no longer consumes."""
from ..schema import Api, F

API = Api(
    key=47, name="OffsetDelete", valid=(0, 0), flexible=None,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
            ]),
        ]),
    ],
    response=[
        F("error_code", "int16"),
        F("throttle_time_ms", "int32"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)
