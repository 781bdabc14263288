"""ListGroups (key 16): list the groups a broker coordinates."""
from ..schema import Api, F

API = Api(
    key=16, name="ListGroups", valid=(0, 5), flexible=3,
    request=[
        F("states_filter", "[]string", v="4+"),
        F("types_filter", "[]string", v="5+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16"),
        F("groups", "[]", fields=[
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", v="4+"),
            F("group_type", "string", v="5+"),
        ]),
    ],
)
