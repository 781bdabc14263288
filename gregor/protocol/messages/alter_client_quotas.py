"""AlterClientQuotas (key 49): set or remove client quota configs (KIP-546)."""
from ..schema import Api, F

API = Api(
    key=49, name="AlterClientQuotas", valid=(0, 1), flexible=1,
    request=[
        F("entries", "[]", fields=[
            F("entity", "[]", fields=[
                F("entity_type", "string"),
                F("entity_name", "string", nullable="0+"),
            ]),
            F("ops", "[]", fields=[
                F("key", "string"),
                F("value", "float64"),
                F("remove", "bool"),
            ]),
        ]),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("entries", "[]", fields=[
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("entity", "[]", fields=[
                F("entity_type", "string"),
                F("entity_name", "string", nullable="0+"),
            ]),
        ]),
    ],
)
