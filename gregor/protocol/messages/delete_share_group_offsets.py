"""DeleteShareGroupOffsets (key 92): forget an empty share group's state for whole topics
(kafka-share-groups.sh --delete-offsets). v0."""
from ..schema import Api, F, NULL

API = Api(
    key=92, name="DeleteShareGroupOffsets", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_name", "string"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("responses", "[]", fields=[
            F("topic_name", "string"),
            F("topic_id", "uuid"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=NULL),
        ]),
    ],
)
