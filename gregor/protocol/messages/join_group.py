"""JoinGroup (key 11): join a consumer group and take part in a rebalance."""
from ..schema import Api, F, NULL

API = Api(
    key=11, name="JoinGroup", valid=(0, 9), flexible=6,
    request=[
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", v="1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", v="5+", nullable="5+", default=NULL),
        F("protocol_type", "string"),
        F("protocols", "[]", fields=[
            F("name", "string"),
            F("metadata", "bytes"),
        ]),
        F("reason", "string", v="8+", nullable="8+", default=NULL),
    ],
    response=[
        F("throttle_time_ms", "int32", v="2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", v="7+", nullable="7+", default=NULL),
        F("protocol_name", "string", nullable="7+"),
        F("leader", "string"),
        F("skip_assignment", "bool", v="9+"),
        F("member_id", "string"),
        F("members", "[]", fields=[
            F("member_id", "string"),
            F("group_instance_id", "string", v="5+", nullable="5+", default=NULL),
            F("metadata", "bytes"),
        ]),
    ],
)
