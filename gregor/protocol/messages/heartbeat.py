"""Heartbeat (key 12): keep a group membership alive."""
from ..schema import Api, F, NULL

API = Api(
    key=12, name="Heartbeat", valid=(0, 4), flexible=4,
    request=[
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", v="3+", nullable="3+", default=NULL),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16"),
    ],
)
