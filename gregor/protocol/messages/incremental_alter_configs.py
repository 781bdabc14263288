"""IncrementalAlterConfigs (key 44): SET, DELETE, APPEND or SUBTRACT single configs of topics,
brokers, broker loggers and groups."""
from ..schema import Api, F

API = Api(
    key=44, name="IncrementalAlterConfigs", valid=(0, 1), flexible=1,
    request=[
        F("resources", "[]", fields=[
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", "[]", fields=[
                F("name", "string"),
                F("config_operation", "int8"),
                F("value", "string", nullable="0+"),
            ]),
        ]),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("responses", "[]", fields=[
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
        ]),
    ],
)
