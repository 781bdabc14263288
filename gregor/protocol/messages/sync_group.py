"""SyncGroup (key 14): the leader hands out assignments; every member receives its own."""
from ..schema import Api, F, NULL

API = Api(
    key=14, name="SyncGroup", valid=(0, 5), flexible=4,
    request=[
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", v="3+", nullable="3+", default=NULL),
        F("protocol_type", "string", v="5+", nullable="5+", default=NULL),
        F("protocol_name", "string", v="5+", nullable="5+", default=NULL),
        F("assignments", "[]", fields=[
            F("member_id", "string"),
            F("assignment", "bytes"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16"),
        F("protocol_type", "string", v="5+", nullable="5+", default=NULL),
        F("protocol_name", "string", v="5+", nullable="5+", default=NULL),
        F("assignment", "bytes"),
    ],
)
