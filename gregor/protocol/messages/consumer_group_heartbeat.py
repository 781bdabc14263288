"""ConsumerGroupHeartbeat (key 68): a member of a KIP-848 consumer group joins, heartbeats,
reconciles its assignment and leaves through this one API."""
from ..schema import Api, F, NULL

_TOPIC_PARTITIONS = [
    F("topic_id", "uuid"),
    F("partitions", "[]int32"),
]

API = Api(
    key=68, name="ConsumerGroupHeartbeat", valid=(0, 1), flexible=0,
    request=[
        F("group_id", "string"),
        F("member_id", "string"),
        F("member_epoch", "int32"),
        F("instance_id", "string", nullable="0+", default=NULL),
        F("rack_id", "string", nullable="0+", default=NULL),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("subscribed_topic_names", "[]string", nullable="0+", default=NULL),
        F("subscribed_topic_regex", "string", v="1+", nullable="1+", default=NULL),
        F("server_assignor", "string", nullable="0+", default=NULL),
        F("topic_partitions", "[]", nullable="0+", default=NULL, fields=_TOPIC_PARTITIONS),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("member_id", "string", nullable="0+", default=NULL),
        F("member_epoch", "int32"),
        F("heartbeat_interval_ms", "int32"),
        F("assignment", "struct", nullable="0+", default=NULL, fields=[
            F("topic_partitions", "[]", fields=_TOPIC_PARTITIONS),
        ]),
    ],
)
