"""LeaveGroup (key 13): leave a consumer group."""
from ..schema import Api, F, NULL

API = Api(
    key=13, name="LeaveGroup", valid=(0, 5), flexible=4,
    request=[
        F("group_id", "string"),
        F("member_id", "string", v="0-2"),
        F("members", "[]", v="3+", fields=[
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+", default=NULL),
            F("reason", "string", v="5+", nullable="5+", default=NULL),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16"),
        F("members", "[]", v="3+", fields=[
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+"),
            F("error_code", "int16"),
        ]),
    ],
)
