"""DeleteTopics (key 20): delete topics by name or id."""
from ..schema import Api, F, NULL

API = Api(
    key=20, name="DeleteTopics", valid=(0, 6), flexible=4,
    request=[
        F("topics", "[]", v="6+", fields=[
            F("name", "string", nullable="0+", default=NULL),
            F("topic_id", "uuid"),
        ]),
        F("topic_names", "[]string", v="0-5"),
        F("timeout_ms", "int32"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("responses", "[]", fields=[
            F("name", "string", nullable="6+"),
            F("topic_id", "uuid", v="6+"),
            F("error_code", "int16"),
            F("error_message", "string", v="5+", nullable="5+", default=NULL),
        ]),
    ],
)
