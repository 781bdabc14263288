"""DescribeConfigs (key 32): read broker and topic configuration."""
from ..schema import Api, F

API = Api(
    key=32, name="DescribeConfigs", valid=(0, 4), flexible=4,
    request=[
        F("resources", "[]", fields=[
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", "[]string", nullable="0+"),
        ]),
        F("include_synonyms", "bool", v="1+"),
        F("include_documentation", "bool", v="3+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=[
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", "[]", fields=[
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("read_only", "bool"),
                F("is_default", "bool", v="0"),
                F("config_source", "int8", v="1+", default=-1),
                F("is_sensitive", "bool"),
                F("synonyms", "[]", v="1+", fields=[
                    F("name", "string"),
                    F("value", "string", nullable="0+"),
                    F("source", "int8"),
                ]),
                F("config_type", "int8", v="3+"),
                F("documentation", "string", v="3+", nullable="0+"),
            ]),
        ]),
    ],
)
