"""ApiVersions (key 18): which API versions a broker supports."""
from ..schema import Api, F

API = Api(
    key=18, name="ApiVersions", valid=(0, 4), flexible=3,
    request=[
        F("client_software_name", "string", v="3+"),
        F("client_software_version", "string", v="3+"),
    ],
    response=[
        F("error_code", "int16"),
        F("api_keys", "[]", fields=[
            F("api_key", "int16"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ]),
        F("throttle_time_ms", "int32", v="1+"),
        F("supported_features", "[]", v="3+", tagged="3+", tag=0, fields=[
            F("name", "string"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ]),
        F("finalized_features_epoch", "int64", v="3+", tagged="3+", tag=1, default=-1),
        F("finalized_features", "[]", v="3+", tagged="3+", tag=2, fields=[
            F("name", "string"),
            F("max_version_level", "int16"),
            F("min_version_level", "int16"),
        ]),
        F("zk_migration_ready", "bool", v="3+", tagged="3+", tag=3, default=False),
    ],
)
