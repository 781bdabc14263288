"""AlterUserScramCredentials (key 51): add, replace or remove SCRAM credentials (KIP-554).
The client sends the salt and the salted password; the password never travels."""
from ..schema import Api, F

API = Api(
    key=51, name="AlterUserScramCredentials", valid=(0, 0), flexible=0,
    request=[
        F("deletions", "[]", fields=[
            F("name", "string"),
            F("mechanism", "int8"),
        ]),
        F("upsertions", "[]", fields=[
            F("name", "string"),
            F("mechanism", "int8"),
            F("iterations", "int32"),
            F("salt", "bytes"),
            F("salted_password", "bytes"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=[
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ],
)
