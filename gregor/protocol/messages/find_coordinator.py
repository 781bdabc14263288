"""FindCoordinator (key 10): locate the group or transaction coordinator for a key."""
from ..schema import Api, F

API = Api(
    key=10, name="FindCoordinator", valid=(0, 6), flexible=3,
    request=[
        F("key", "string", v="0-3"),
        F("key_type", "int8", v="1+"),
        F("coordinator_keys", "[]string", v="4+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16", v="0-3"),
        F("error_message", "string", v="1-3", nullable="1-3"),
        F("node_id", "int32", v="0-3"),
        F("host", "string", v="0-3"),
        F("port", "int32", v="0-3"),
        F("coordinators", "[]", v="4+", fields=[
            F("key", "string"),
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)
