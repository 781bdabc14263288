"""ShareGroupHeartbeat (key 76): a member of a share group (KIP-932) joins, heartbeats and
leaves; the answer carries its epoch and, when it changed, its assignment by topic id.

v0 was Kafka 4.0's early access and is gone from 4.1 on; v1 (the stable version) has the same
fields. The description keeps v0 so it can be checked against Kafka's schema files; the
broker serves v1 only, as Kafka 4.1+ does."""
from ..schema import Api, F, NULL

API = Api(
    key=76, name="ShareGroupHeartbeat", valid=(0, 1), flexible=0,
    request=[
        F("group_id", "string"),
        F("member_id", "string"),
        F("member_epoch", "int32"),
        F("rack_id", "string", nullable="0+", default=NULL),
        F("subscribed_topic_names", "[]string", nullable="0+", default=NULL),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("member_id", "string", nullable="0+", default=NULL),
        F("member_epoch", "int32"),
        F("heartbeat_interval_ms", "int32"),
        F("assignment", "struct", nullable="0+", default=NULL, fields=[
            F("topic_partitions", "[]", fields=[
                F("topic_id", "uuid"),
                F("partitions", "[]int32"),
            ]),
        ]),
    ],
)
