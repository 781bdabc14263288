"""CreateAcls (key 30): add ACL bindings. v1 adds the pattern type, v2 is flexible, v3
allows the USER resource type."""
from ..schema import Api, F

API = Api(
    key=30, name="CreateAcls", valid=(0, 3), flexible=2,
    request=[
        F("creations", "[]", fields=[
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("resource_pattern_type", "int8", v="1+", default=3),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=[
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)
