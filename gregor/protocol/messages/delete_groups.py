"""DeleteGroups (key 42): delete empty consumer groups and their committed offsets."""
from ..schema import Api, F

API = Api(
    key=42, name="DeleteGroups", valid=(0, 2), flexible=2,
    request=[
        F("groups_names", "[]string"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=[
            F("group_id", "string"),
            F("error_code", "int16"),
        ]),
    ],
)
