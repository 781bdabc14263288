"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms each user has (KIP-554)."""
from ..schema import Api, F

API = Api(
    key=50, name="DescribeUserScramCredentials", valid=(0, 0), flexible=0,
    request=[
        F("users", "[]", nullable="0+", fields=[
            F("name", "string"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("results", "[]", fields=[
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("credential_infos", "[]", fields=[
                F("mechanism", "int8"),
                F("iterations", "int32"),
            ]),
        ]),
    ],
)
