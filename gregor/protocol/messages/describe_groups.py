"""DescribeGroups (key 15): state and members of consumer groups."""
from ..schema import Api, F, NULL

API = Api(
    key=15, name="DescribeGroups", valid=(0, 5), flexible=5,
    request=[
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", v="3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("groups", "[]", fields=[
            F("error_code", "int16"),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F("members", "[]", fields=[
                F("member_id", "string"),
                F("group_instance_id", "string", v="4+", nullable="4+", default=NULL),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            ]),
            F("authorized_operations", "int32", v="3+", default=-2147483648),
        ]),
    ],
)
